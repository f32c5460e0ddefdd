/* The conversation's settings (model, system prompt, temperature, top p, max tokens): the
 * summary chip in the header, the dialog that edits them, and the presets it offers, built-in
 * and the person's own (saved and deleted over HTTP). Saving sends chat.settings; a chat not yet
 * saved keeps them in config.settings for its first chat.send (state.settingsUnsent). */

import { ui, config, state, charLength } from "./state.js";
import { sendFrame } from "./socket.js";
import { openDialog } from "./dialogs.js";

const { $, el, say, fmtInt, fetchJson } = window.HomeAI;

const SETTING_FIELDS = [
  ["model", "setting-model"], ["system_prompt", "setting-system-prompt"], ["temperature", "setting-temperature"],
  ["top_p", "setting-top-p"], ["max_tokens", "setting-max-tokens"],
];
const NUMBER_FIELDS = SETTING_FIELDS.slice(2);

// A model's short name where it has one ("smollm2:135m"), else its file name.
export function modelLabel(name) {
  const model = config.models.find((m) => m.name === name);
  return (model && model.alias) || name;
}

function fillModelSelect(selected) {
  const fallback = el("option", null, say(gettext("Server default (%(model)s)"), { model: modelLabel(config.defaults.model) }));
  fallback.value = "";
  const options = [fallback];
  const names = config.models.map((m) => m.name);
  if (selected && !names.includes(selected)) names.push(selected);  // a model no longer listed stays visible
  for (const name of names) {
    const model = config.models.find((m) => m.name === name);
    const label = model && model.alias ? `${model.alias} · ${name}` : name;
    const option = el("option", null, model && model.held ? label : say(gettext("%(model)s (no worker holds it now)"), { model: label }));
    option.value = name;
    options.push(option);
  }
  $("setting-model").replaceChildren(...options);
  $("setting-model").value = selected || "";
}
const settingsUi = {
  form: $("settings-form"), preset: $("preset-select"), presetDelete: $("preset-delete"), error: $("settings-error"),
  count: $("system-prompt-count"), reset: $("settings-reset"), presetSave: $("preset-save"),
  presetRow: $("save-preset-row"), presetName: $("preset-name"), presetConfirm: $("preset-save-confirm"),
};

// Only the settings that are set: a chat.send or chat.settings frame, or a preset to save.
export function sentSettings(values) {
  const out = {};
  for (const [name] of SETTING_FIELDS) {
    const v = values[name];
    out[name] = v === "" || v == null ? null : v;
  }
  return out;
}

// The settings a preset holds (the ones it sets).
const heldNames = (held) => Object.keys(held || {}).filter((k) => held[k] !== null && held[k] !== "");

// The preset that matches the most of the conversation's settings, if any matches.
function matchingPreset(values) {
  let best = null;
  for (const p of config.presets) {
    const names = heldNames(p.settings);
    if (names.length && names.every((k) => values[k] === p.settings[k]) && (!best || names.length > heldNames(best.settings).length)) best = p;
  }
  return best;
}

// "Precise · System prompt · 512 tokens": a preset's name, then what it does not say.
function summariseSettings(values) {
  const preset = matchingPreset(values);
  const held = new Set(preset ? heldNames(preset.settings) : []);
  const parts = preset ? [preset.name] : [];
  const say = { model: (v) => modelLabel(v), system_prompt: () => gettext("System prompt"), temperature: (v) => interpolate(gettext("temp %(v)s"), { v }, true), top_p: (v) => interpolate(gettext("top p %(v)s"), { v }, true), max_tokens: (v) => interpolate(gettext("%(n)s tokens"), { n: fmtInt(v) }, true) };
  for (const [name] of SETTING_FIELDS) {
    const v = values[name];
    if (!held.has(name) && v !== null && v !== "" && v !== undefined) parts.push(say[name](v));
  }
  return parts.length ? parts.join(" · ") : gettext("Default settings");
}

function showSettingsSummary() {
  const text = summariseSettings(config.settings);
  ui.settingsSummary.textContent = text;
  const values = SETTING_FIELDS.map(([name, id]) => `${document.querySelector(`label[for="${id}"]`).textContent}: ${config.settings[name] === null || config.settings[name] === "" ? gettext("default") : config.settings[name]}`);
  ui.settingsButton.title = `${gettext("Chat settings (Ctrl+Shift+S)")}\n${values.join("\n")}`;
  ui.settingsButton.classList.toggle("is-custom", text !== gettext("Default settings"));
}

function fillPresetSelect(selected) {
  const options = [el("option", null, gettext("Custom"))];
  options[0].value = "";
  const groups = [[gettext("Built-in"), config.presets.filter((p) => p.builtin)], [gettext("Yours"), config.presets.filter((p) => !p.builtin)]];
  for (const [label, list] of groups) {
    if (!list.length) continue;
    const group = el("optgroup");
    group.label = label;
    for (const p of list) {
      const option = el("option", null, p.name);
      option.value = String(p.id);
      group.append(option);
    }
    options.push(group);
  }
  settingsUi.preset.replaceChildren(...options);
  settingsUi.preset.value = selected == null ? "" : String(selected);
  settingsUi.presetDelete.hidden = !selectedPreset() || selectedPreset().builtin;
}

const selectedPreset = () => config.presets.find((p) => String(p.id) === settingsUi.preset.value) || null;

function fillSettingsForm(values) {
  fillModelSelect(values.model);
  for (const [name, id] of SETTING_FIELDS.slice(1)) {
    const v = values[name];
    $(id).value = v === null || v === undefined ? "" : String(v);
    const def = config.defaults[name];
    if (name !== "system_prompt") $(id).placeholder = def == null ? "" : say(gettext("%(value)s (default)"), { value: def });
  }
  updatePromptCount();
}

function updatePromptCount() {
  const limit = config.system_prompt_chars || 4000;
  const len = charLength($("setting-system-prompt").value);
  settingsUi.count.textContent = say(gettext("%(n)s / %(limit)s characters"), { n: fmtInt(len), limit: fmtInt(limit) });
  settingsUi.count.classList.toggle("over", len > limit);
}

// The form's values, checked; null (with the reason shown) when one is out of range.
function readSettingsForm() {
  const out = { model: $("setting-model").value, system_prompt: $("setting-system-prompt").value.trim() };
  const limit = config.system_prompt_chars || 4000;
  if (charLength(out.system_prompt) > limit) return settingsError(say(gettext("The system prompt is over %(limit)s characters."), { limit: fmtInt(limit) }), "setting-system-prompt");
  const ranges = { temperature: [0, 5, false], top_p: [0, 1, false], max_tokens: [1, config.max_tokens_limit, true] };
  for (const [name, id] of NUMBER_FIELDS) {
    const input = $(id);
    const raw = input.value.trim();
    if (!raw && !input.validity.badInput) { out[name] = null; continue; }
    const n = Number(raw);
    const [low, high, whole] = ranges[name];
    if (!raw || !Number.isFinite(n) || n < low || n > high || (whole && !Number.isInteger(n))) {
      const label = document.querySelector(`label[for="${id}"]`).textContent;
      return settingsError(say(whole ? gettext("%(label)s must be a whole number from %(low)s to %(high)s, or empty for the default.") : gettext("%(label)s must be a number from %(low)s to %(high)s, or empty for the default."), { label, low, high: fmtInt(high) }), id);
    }
    out[name] = n;
  }
  settingsUi.error.hidden = true;
  return out;
}

function settingsError(message, focusId) {
  settingsUi.error.textContent = message;
  settingsUi.error.hidden = false;
  if (focusId) $(focusId).focus();
  return null;
}

export function openSettings() {
  fillSettingsForm(config.settings);
  const match = matchingPreset(config.settings);
  fillPresetSelect(match ? match.id : null);
  settingsUi.error.hidden = true;
  settingsUi.presetRow.hidden = true;
  openDialog(ui.settingsDialog, ui.settingsButton);
  $("setting-system-prompt").focus();
}

function onPresetPicked() {
  const preset = selectedPreset();
  settingsUi.presetDelete.hidden = !preset || preset.builtin;
  if (!preset) return;
  // A preset sets the values it holds; the others go back to the defaults (but the model:
  // a preset without one keeps the model chosen).
  const values = { model: $("setting-model").value, system_prompt: "", temperature: null, top_p: null, max_tokens: null };
  for (const [name] of SETTING_FIELDS) if (preset.settings[name] != null) values[name] = preset.settings[name];
  fillSettingsForm(values);
}

function saveSettings(event) {
  event.preventDefault();
  const values = readSettingsForm();
  if (!values) return;
  if (config.conversation == null) {
    // A new chat has no id yet: its first chat.send carries the settings.
    config.settings = Object.assign({}, values);
    state.settingsUnsent = true;
    showSettingsSummary();
  } else if (!sendFrame({ type: "chat.settings", conversation: config.conversation, settings: sentSettings(values) })) {
    settingsError(gettext("Not connected to the server yet. Try again in a moment."));
    return;
  }
  ui.settingsDialog.close();
}

export function onSettings(msg) {
  if (msg.conversation !== config.conversation) return;
  config.settings = Object.assign({}, config.settings, msg.settings);
  showSettingsSummary();
}

async function savePreset() {
  const name = settingsUi.presetName.value.trim();
  if (!name) { settingsError(gettext("Give the preset a name."), "preset-name"); return; }
  const values = readSettingsForm();
  if (!values) return;
  try {
    const data = await fetchJson("/chat/presets/", { name, settings: sentSettings(values) });
    config.presets.push(data.preset);
    fillPresetSelect(data.preset.id);
    settingsUi.presetRow.hidden = true;
    settingsUi.presetName.value = "";
    settingsUi.preset.focus();
  } catch (e) { settingsError(e.message, "preset-name"); }
}

async function deletePreset() {
  const preset = selectedPreset();
  if (!preset || preset.builtin || !window.confirm(say(gettext("Delete the preset %(name)s?"), { name: preset.name }))) return;
  try {
    await fetchJson(`/chat/presets/${preset.id}/delete/`, {});
    config.presets = config.presets.filter((p) => p !== preset);
    fillPresetSelect(null);
    showSettingsSummary();
    settingsUi.preset.focus();
  } catch (e) { settingsError(e.message); }
}

export function initSettings() {
  showSettingsSummary();
  ui.settingsButton.addEventListener("click", openSettings);
  settingsUi.form.addEventListener("submit", saveSettings);
  settingsUi.preset.addEventListener("change", onPresetPicked);
  settingsUi.presetDelete.addEventListener("click", deletePreset);
  $("setting-system-prompt").maxLength = config.system_prompt_chars || 4000;
  $("setting-max-tokens").max = String(config.max_tokens_limit);
  $("setting-system-prompt").addEventListener("input", updatePromptCount);
  settingsUi.form.addEventListener("input", (e) => { if (e.target !== settingsUi.preset && e.target !== settingsUi.presetName) settingsUi.preset.value = ""; });
  settingsUi.reset.addEventListener("click", () => { fillSettingsForm({}); settingsUi.preset.value = ""; settingsUi.presetDelete.hidden = true; });
  settingsUi.presetSave.addEventListener("click", () => { settingsUi.presetRow.hidden = false; settingsUi.presetName.focus(); });
  settingsUi.presetConfirm.addEventListener("click", savePreset);
  settingsUi.presetName.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); savePreset(); } });
}
