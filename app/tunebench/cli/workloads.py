"""`tunebench workloads` (the families, their options and transactions, and the workload presets) and
`tunebench check` (a family's consistency conditions on the prepared data)."""

from __future__ import annotations

import argparse
from typing import Any

from tunebench.cli.output import emit
from tunebench.cli.resolve import open_store, resolve_target
from tunebench.run.tasks import check_data, data_request, workload_catalog


def cmd_workloads(args: argparse.Namespace) -> int:
    catalog = workload_catalog(args.family)
    lines: list[str] = []
    for fam in catalog["families"]:
        lines += [f"family {fam['name']}: {fam['description']}",
                  f"  engines: {', '.join(fam['engines'])}"
                  + (f"; headline figure: {fam['headline']}" if fam["headline"] else ""),
                  "  transactions (weight):" if len(fam["transactions"]) > 1 else "  transaction:"]
        lines += [f"    {t['name']:14} {t['weight']:>3}  {t['help']}" for t in fam["transactions"]]
        lines.append("  options (-o NAME=VALUE):")
        for o in fam["options"]:
            bounds = ""
            if o["choices"]:
                bounds = f" ({'/'.join(o['choices'])})"
            elif o["min"] is not None:
                bounds = f" ({o['min']:g}..{o['max']:g})"
            lines.append(f"    {o['name']:22} {o['type']:5} default {_value(o['default']):10} {o['help']}{bounds}")
        presets = [w for w in catalog["workloads"] if w["family"] == fam["name"]]
        lines.append("  workloads: " + ", ".join(w["name"] for w in presets))
        lines.append("")
    emit(args, catalog, "\n".join(lines).rstrip())
    return 0


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def cmd_check(args: argparse.Namespace) -> int:
    from tunebench.cli.runs import workload_options

    request = data_request(args.workload, workload_options(args), schema=args.schema, lua=args.lua)
    store = open_store(args)
    target = resolve_target(args, store)
    outcome = check_data(target, request, transport=args.transport)
    emit(args, outcome, outcome["summary"])
    return 0 if outcome["ok"] else 1
