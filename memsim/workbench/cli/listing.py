"""``memsim list``: the registered policies by family, the clairvoyant bound, the scenarios
and the protocols a comparison can run under."""

from __future__ import annotations

import argparse

from memsim.engine import registry

from ..present.style import FAMILIES, policy_family
from ..runs.execution import list_policies, list_scenarios
from ..runs.protocols import describe


def add_arguments(s: argparse.ArgumentParser) -> None:
    """``memsim list`` takes no argument."""


def run(args: argparse.Namespace) -> int:
    pol = list_policies()
    print("Policies:")
    for fam in FAMILIES[:-1]:
        rows = [r for _, r in pol.iterrows() if policy_family(str(r.id)) == fam]
        if rows:
            print(f"  {fam}:")
        for r in rows:
            caps = f" [{r.capabilities}]" if r.capabilities else ""
            print(f"    {r.full_id:<14} {r.description}{caps}")
    bounds = [s for s in registry.specs(references=True) if s.clairvoyant]
    if bounds:
        print("\nReference bound (reads the ground truth: a yardstick, never a competitor):")
        for s in bounds:
            print(f"  {s.full_id:<14} {s.description}")
    print("\nScenarios:")
    for _, r in list_scenarios().iterrows():
        print(f"  {r.spec:<38} {r.description}")
    print("\nProtocols (memsim compare --protocols; A+B composes two, standard, cross):")
    for name, axis, text in describe():
        print(f"  {name:<15} {axis:<14} {text}")
    return 0
