/* Answers read aloud (docs/speech.md): the speaker button on an answer, and the person's auto-read
 * setting, which reads each answer this page sends as it is written. A worker makes each
 * sentence's WAV and says so on the socket (speech.audio); the page fetches it (its own answers
 * only), decodes it with Web Audio and plays the sentences one after another, in order. */

import { config } from "./state.js";
import { sendFrame } from "./socket.js";
import { showBanner } from "./controls.js";

const { el } = window.HomeAI;

let context = null;   // one AudioContext, made on a click or a send (browsers' autoplay rules)
let reading = null;   // the answer being read: {id, button, next, ready: Map(index -> buffer), endAt, count, sources}

function audioContext() {
  if (!context) context = new AudioContext();
  if (context.state === "suspended") context.resume();
  return context;
}

function label(button, speaking) {
  button.textContent = speaking ? gettext("Stop reading") : gettext("Read aloud");
  button.setAttribute("aria-pressed", String(speaking));
}

// The speaker button of one answer (branches.js puts it beside Copy).
export function speakerButton(view) {
  const button = el("button", "action-button speak-button");
  button.type = "button";
  button.title = gettext("Read this answer aloud");
  label(button, false);
  view.speakEl = button;
  button.addEventListener("click", () => {
    if (reading && reading.id === view.id) stop();
    else read(view.id, button);
  });
  return button;
}

// Start reading an answer (a click, or auto-read when this page sends a message).
export function read(generationId, button = null) {
  audioContext();
  stop();
  if (!sendFrame({ type: "chat.speak", generation: generationId })) {
    showBanner(gettext("Not connected to the server yet. Try again in a moment."));
    return;
  }
  reading = { id: generationId, button, next: 0, ready: new Map(), endAt: 0, count: null, sources: [] };
  if (button) label(button, true);
}

export const autoRead = () => Boolean(config.speech && config.auto_read);

export function stop() {
  if (!reading) return;
  for (const source of reading.sources) { try { source.stop(); } catch { /* not started */ } }
  if (reading.button) label(reading.button, false);
  reading = null;
}

// speech.audio: one sentence is ready; fetch and decode it, then play what is next in order.
async function onAudio(msg) {
  const mine = reading;
  if (!mine || mine.id !== msg.generation) return;
  try {
    const response = await fetch(`/chat/speech/${msg.generation}/${msg.index}/`, { credentials: "same-origin" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const buffer = await audioContext().decodeAudioData(await response.arrayBuffer());
    if (reading !== mine) return;
    mine.ready.set(msg.index, buffer);
    playReady(mine);
  } catch (error) {
    console.warn("HomeAI: audio", error);
    if (reading === mine) {
      showBanner(gettext("The answer could not be read aloud."));
      stop();
    }
  }
}

function playReady(mine) {
  const ctx = audioContext();
  while (mine.ready.has(mine.next)) {
    const buffer = mine.ready.get(mine.next);
    mine.ready.delete(mine.next);
    const source = ctx.createBufferSource();
    source.buffer = buffer;
    source.connect(ctx.destination);
    const at = Math.max(ctx.currentTime + 0.02, mine.endAt);
    source.start(at);
    mine.endAt = at + buffer.duration;
    mine.sources.push(source);
    mine.next += 1;
    document.dispatchEvent(new CustomEvent("homeai:speech-played", { detail: { generation: mine.id, index: mine.next - 1, duration: buffer.duration } }));
    source.onended = () => finishIfDone(mine);
  }
}

// speech.end: how many sentences there were; a failure's sentence for the person.
function onEnd(msg) {
  if (!reading || reading.id !== msg.generation) return;
  if (msg.code) {
    // The worker's sentence is English; the page says it in the person's language.
    showBanner(msg.code === "nothing_readable" ? gettext("This answer has nothing the installed voice can read.") : gettext("The answer could not be read aloud."));
    stop();
    return;
  }
  reading.count = msg.count;
  finishIfDone(reading);
}

// The button goes back once every sentence has been played.
function finishIfDone(mine) {
  if (reading === mine && mine.count !== null && mine.next >= mine.count && audioContext().currentTime >= mine.endAt - 0.05) stop();
}

export const SPEECH_HANDLERS = { "speech.audio": onAudio, "speech.end": onEnd };
