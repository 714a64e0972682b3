"""The device a served decoder's driver runs its kernels on: `cpu` (Triton's interpreter) or `cuda` (the
compiled kernels), for `rheo gate --device` (docs/THIRD_PARTY.md, "On the decoder's GPU").

The gate passes the device to the driver in the environment variable `RHEO_SERVED_DEVICE` (sampling workers
inherit it). A driver calls `prepare()` (or `os.environ.update(settings())`) first, before it imports triton or the package
under test: with cpu it
sets `TRITON_INTERPRET=1` (and, where the driver asks, `CUDA_VISIBLE_DEVICES=""`), exactly as the drivers always
did; with cuda it sets neither. Once torch is imported, `require(device)` ends a cuda run where that
interpreter's torch sees no CUDA device (`torch.cuda.is_available()` false), with exit status `NO_DEVICE` and one
JSON line `{"no_device": ...}` on stdout, which `rheo.decoders.served.run_driver` turns into a one-line
`DeviceUnavailable` (exit 2). `path(device)` is what every driver's reply records of where it ran.

Standard library only: drivers import it in the served environment, before anything else.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

DEVICE_VAR = "RHEO_SERVED_DEVICE"  # `rheo gate --device`: read by the drivers before they import triton
DEVICES = ("cpu", "cuda")
NO_DEVICE = 4  # a driver's exit status when --device cuda finds no CUDA device (its stdout: {"no_device": ...})


def requested() -> str:
    """The device the gate asked for (`cpu` when unset); another value ends the driver with a one-line reason."""
    device = os.environ.get(DEVICE_VAR) or "cpu"
    if device not in DEVICES:
        raise SystemExit(f"driver: {DEVICE_VAR}={device!r}; allowed: {', '.join(DEVICES)}")
    return device


def settings(*, hide_cuda: bool = False) -> dict[str, str]:
    """What a driver puts in its environment before it imports triton (`os.environ.update(settings())`): with cpu
    `TRITON_INTERPRET=1` (and `CUDA_VISIBLE_DEVICES=""` when `hide_cuda`) where not already set, exactly as the
    drivers always did; with cuda nothing."""
    if requested() != "cpu":
        return {}
    wanted = {"TRITON_INTERPRET": "1", **({"CUDA_VISIBLE_DEVICES": ""} if hide_cuda else {})}
    return {k: v for k, v in wanted.items() if k not in os.environ}


def prepare(*, hide_cuda: bool = False) -> str:
    """`settings()` put in the environment; the requested device."""
    os.environ.update(settings(hide_cuda=hide_cuda))
    return requested()


def no_device(reason: str) -> NoReturn:
    """Exit with status NO_DEVICE and one JSON line saying why (read by `rheo.decoders.served.run_driver`)."""
    from rheo.decoders.driver_io import reply  # (a driver: it claimed its stdout when it started)

    reply({"no_device": reason})
    raise SystemExit(NO_DEVICE)


def require(device: str) -> Any:
    """The torch device to build every tensor on; with cuda, end the driver (`no_device`) when this interpreter's
    torch shows no CUDA device."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
        why = f"CUDA_VISIBLE_DEVICES={hidden!r}" if hidden is not None else f"torch {torch.__version__}"
        no_device(f"--device cuda: torch.cuda.is_available() is false in {sys.executable} ({why}); allowed "
                  "here: --device cpu (Triton's interpreter)")  # fmt: skip
    return torch.device(device)


def path(device: str) -> dict[str, Any]:
    """Where a driver ran: the device, and whether Triton's interpreter ran its kernels (TRITON_INTERPRET=1)."""
    return {"device": device, "interpreter": os.environ.get("TRITON_INTERPRET") == "1"}
