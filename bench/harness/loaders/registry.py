"""Every loader plugin, by name. A plugin module exports LOADERS."""

import importlib

MODULES = ["torch_dl", "mosaic", "hf", "lance_loader", "litdata_loader", "weft_loader"]


def all_loaders():
    out = []
    for m in MODULES:
        out.extend(importlib.import_module(f"{__package__}.{m}").LOADERS)
    return out


def get(name):
    for ld in all_loaders():
        if ld.name == name:
            return ld
    raise KeyError(name)
