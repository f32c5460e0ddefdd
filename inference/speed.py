"""The decode forecast's arithmetic (no Django, no llama.cpp: the library page, a pull's forecast
and bench/decode_forecast.py share it).

A decode step on a CPU costs two things: every layer's fixed cost (its graph nodes and the
barriers between them: the worker's layer probe, inference/engine/layer_probe.py) and reading
every weight once (the file's size over the rate llama.cpp reads weights at here):

    step = layers x layer_ms + size / read rate

The read rate comes from the other models' measured answers, each answer's step less its own
layers' cost; before any has answered, from the probe's raw memory bandwidth, which no decode
reaches (a ceiling, shown as ≤). With one bandwidth and no layer term, the two bundled models
could not both be forecast on a 2-core EPYC (1.41x and 0.71x their measured speeds): SmolLM2-135M
has 30 layers in 98 MB, Gemma 3 270M 18 in 253 MB.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    """What the forecast needs of a model: its file's size and its number of layers (0 when
    unknown: then only its size counts)."""

    size: int
    layers: int = 0

    def layers_ms(self, layer_ms: float) -> float:
        """What its layers cost a decode step beside reading its weights."""
        return self.layers * layer_ms


@dataclass(frozen=True)
class DecodeSpeed:
    """A model's decode forecast on this box: basis "answers" (the read rate the other models'
    answers reached) or "roofline" (the probe's raw bandwidth: a ceiling); "" with no figure."""

    tps: float | None
    basis: str
    read_gbs: float | None
    layer_ms: float


def step_ms(shape: Shape, read_gbs: float, layer_ms: float) -> float:
    return shape.layers_ms(layer_ms) + shape.size / (read_gbs * 1e6)


def read_rate(
    shapes: dict[str, Shape], measured: dict[str, float], layer_ms: float, *, exclude: str = ""
) -> float | None:
    """GB/s llama.cpp reads weights at here: for each model but `exclude` (a model's own answers
    never forecast it) that has measured tok/s, its size over its step less its layers' cost;
    the median. A step its layers alone would outlast says nothing of the rate: left out."""
    rates = []
    for name, tps in measured.items():
        shape = shapes.get(name)
        if name == exclude or shape is None or not shape.size or not tps or tps <= 0:
            continue
        weights_ms = 1000 / tps - shape.layers_ms(layer_ms)
        if weights_ms > 0:
            rates.append(shape.size / weights_ms / 1e6)
    rates.sort()
    return rates[len(rates) // 2] if rates else None


def speed_of(name: str, shape: Shape, shapes: dict[str, Shape], measured: dict[str, float], box: dict) -> DecodeSpeed:
    """The forecast for `name` from the other models' answers, else from the box's probe (its
    `bandwidth_gbs` and, once a worker has measured it, `layer_ms`)."""
    layer_ms = float(box.get("layer_ms") or 0.0)
    if not shape.size:
        return DecodeSpeed(None, "", None, layer_ms)
    if gbs := read_rate(shapes, measured, layer_ms, exclude=name):
        return DecodeSpeed(1000 / step_ms(shape, gbs, layer_ms), "answers", gbs, layer_ms)
    if raw := box.get("bandwidth_gbs"):
        return DecodeSpeed(1000 / step_ms(shape, raw, layer_ms), "roofline", raw, layer_ms)
    return DecodeSpeed(None, "", None, layer_ms)
