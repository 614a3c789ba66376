"""``memsim list``: the registered policies and scenarios."""

from __future__ import annotations

import argparse

from ..runs.execution import list_policies, list_scenarios


def add_arguments(s: argparse.ArgumentParser) -> None:
    """``memsim list`` takes no argument."""


def run(args: argparse.Namespace) -> int:
    pol = list_policies()
    print("Policies:")
    for _, r in pol.iterrows():
        caps = f" [{r.capabilities}]" if r.capabilities else ""
        print(f"  {r.full_id:<14} {r.description}{caps}")
    print("\nScenarios:")
    for _, r in list_scenarios().iterrows():
        print(f"  {r.spec:<38} {r.description}")
    return 0
