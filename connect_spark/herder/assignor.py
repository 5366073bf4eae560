"""The group leader's connector assignment: sticky, balanced and incremental (in two rounds).

The unit is a connector (its tasks all run in its one streaming query). :func:`assign` is pure: the
membership module hands it what every member reported and what the status store says, and sends the
result back through the group protocol. Its rules, as Kafka Connect's incremental cooperative assignor:

* a connector a live member runs stays there (sticky); a deleted one is dropped from its owner;
* a connector nobody runs goes to the least loaded member (connector count, then ``tasks.max`` weight),
  unless it is *held*: its last status says a worker that left the group without a graceful stop runs
  it, and that worker's ``scheduled.rebalance.max.delay.ms`` has not passed (it goes back to that worker
  if it rejoins meanwhile);
* a member above its share gives the surplus up (*revoked*) only while another is below its share; a
  revoked connector is assigned in the next round, after its owner has stopped it and rejoined, so two
  members never run it at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MemberState", "Assignment", "assign"]


@dataclass(frozen=True)
class MemberState:
    """What one member reported when it joined: its ids and the connectors it runs now."""

    member_id: str
    worker_id: str
    url: str
    owned: frozenset[str] = frozenset()


@dataclass
class Assignment:
    """The leader's answer: the connectors of each member, and the ones it must stop then rejoin for."""

    connectors: dict[str, list[str]] = field(default_factory=dict)
    revoked: dict[str, list[str]] = field(default_factory=dict)
    held: list[str] = field(default_factory=list)

    def moved(self, members: list[MemberState]) -> dict[str, str]:
        """Connector -> member id, for the connectors a member gets and did not run (for logs)."""
        owned = {c for m in members for c in m.owned}
        return {c: mid for mid, names in self.connectors.items() for c in names if c not in owned}


def assign(members: list[MemberState], weights: dict[str, int], holders: dict[str, str]) -> Assignment:
    """Assign ``weights``' connectors (name -> ``tasks.max``) over ``members``.

    Args:
        members: the live members, as reported in this round.
        weights: every connector of the config store, with its weight.
        holders: connector -> worker id, for the connectors held for a departed worker still in its delay.
    """
    ordered = sorted(members, key=lambda m: m.member_id)
    result = Assignment({m.member_id: [] for m in ordered}, {m.member_id: [] for m in ordered})
    if not ordered:
        return result
    placed: set[str] = set()
    for member in ordered:  # sticky; a connector reported twice stays with the first member only
        for name in sorted(member.owned):
            if name in weights and name not in placed:
                result.connectors[member.member_id].append(name)
                placed.add(name)
            elif name in weights:
                result.revoked[member.member_id].append(name)
    by_worker = {m.worker_id: m.member_id for m in ordered}
    for name in sorted(weights):
        if name in placed:
            continue
        holder = holders.get(name)
        if holder is not None and holder in by_worker:
            result.connectors[by_worker[holder]].append(name)
        elif holder is not None:
            result.held.append(name)
        else:
            target = min(ordered, key=lambda m: _load(result, m.member_id, weights))
            result.connectors[target.member_id].append(name)
        placed.add(name)
    _balance(result, ordered, weights, len(placed) - len(result.held))
    for names in result.connectors.values():
        names.sort()
    return result


def _load(result: Assignment, member_id: str, weights: dict[str, int]) -> tuple[int, int, str]:
    names = result.connectors[member_id]
    return len(names), sum(weights.get(n, 1) for n in names), member_id


def _balance(result: Assignment, ordered: list[MemberState], weights: dict[str, int], total: int) -> None:
    """Revoke the surplus of members above their share while a member is below it."""
    floor = total // len(ordered)
    deficit = sum(max(0, floor - len(result.connectors[m.member_id])) for m in ordered)
    for member in sorted(ordered, key=lambda m: (-len(result.connectors[m.member_id]), m.member_id)):
        names = result.connectors[member.member_id]
        while deficit > 0 and len(names) > floor:
            heaviest = max(names, key=lambda n: (weights.get(n, 1), n))
            names.remove(heaviest)
            result.revoked[member.member_id].append(heaviest)
            deficit -= 1
