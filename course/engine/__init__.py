"""The frame every topic runs on: a topic is data (`Topic`, `Version`), the `Engine` runs it.

A topic module is its description plus one engine:

    TOPIC = Topic(name="dot", versions=(...), plan=plan, reference=..., ...)
    ENGINE = Engine(TOPIC)
    versions, run, reference, trace, check, panel = (ENGINE.versions, ENGINE.run, ...)
"""

from __future__ import annotations

from .engine import Engine
from .launch import Call, Launch, Plan, Step
from .topic import (
    BenchSpec,
    Block,
    Cover,
    GridRule,
    OneBlock,
    OneWave,
    PanelSpec,
    Residency,
    Size,
    Tiles,
    Topic,
    Version,
)

__all__ = [
    "BenchSpec",
    "Block",
    "Call",
    "Cover",
    "Engine",
    "GridRule",
    "Launch",
    "OneBlock",
    "OneWave",
    "PanelSpec",
    "Plan",
    "Residency",
    "Size",
    "Step",
    "Tiles",
    "Topic",
    "Version",
]  # fmt: skip
