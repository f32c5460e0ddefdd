"""What runs only inside a Celery worker process, plus `registry`, the little the web reads of workers.

- registry:  worker names and heartbeats as stored in Redis, and the tasks the web sends
             (imported by the web: nothing here loads llama.cpp)
- runtime:   this process's engine (built lazily) and how staff's changes reach it
- heartbeat: the background thread that reports status and ships engine steps
- stream:    one answer's run: claim, submit, relay events, save, finish
- tasks:     the Celery tasks and worker signals (thin: IDs in, calls out)
"""
