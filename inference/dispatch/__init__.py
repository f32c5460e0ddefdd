"""The web's view of workers: who is alive and what they hold (registry), the tasks it sends them,
and the answers announced on their way to an engine (arrivals). The web never imports the worker
package itself."""
