"""Values that depend on the model a named call runs on: ``{by: CALL, MODEL: value, default: value}``.

A probability (a repeat's ``continue_p``, a choose option's ``p``, a fail step's ``p``) or a repeat
count may be written per model (contract v1.1). It is resolved once the whole plan is compiled,
because it needs every call's tier in every variant: in a variant where the call named ``by`` runs
on ``MODEL`` at tier ``TIER``, the value is the ``MODEL@TIER`` entry, else the ``MODEL`` entry, else
``default``. Every problem (an unknown call, model or tier, a missing value, calls of that name on
models with different values) is reported with its dotted path.

A step kind asks for it when it compiles (:meth:`Compiler.later`) and receives, once every call is
known, a :class:`Resolver` whose :meth:`Resolver.values` gives one value per variant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentsim.model.scenario import ByModel, ByModelCount, suggest

if TYPE_CHECKING:
    from agentsim.plan.compile_context import CompileContext

__all__ = ["Resolver"]


class Resolver:
    """Per-variant values of model-dependent entries, from the calls' tiers of a compiled plan."""

    def __init__(self, comp: CompileContext):
        self.comp = comp
        self.calls: dict[str, list] = {}
        for n in comp.nodes:
            if n.record == "call":
                self.calls.setdefault(n.name, []).append(n)
        self.nv = len(comp.variants)

    def values(self, spec: Any, path: tuple) -> tuple | None:
        """One value per variant (a probability; for a ByModelCount the number or distribution given), or
        None after reporting why not. A plain value is the same in every variant."""
        if not isinstance(spec, ByModel | ByModelCount):
            return (float(spec),) * self.nv
        if not self._keys_known(spec, path):
            return None
        named = self.calls.get(spec.by, [])
        if not named:
            return None
        out = []
        for v, vname in enumerate(self.comp.variants):
            found = self._found(spec, path, named, v, vname)
            if found is None:
                return None
            out.append(found)
        return tuple(out)

    def _keys_known(self, spec, path) -> bool:
        """Report the keys that name no model or tier, and a ``by`` that names no call."""
        comp, models = self.comp, self.comp.sc.models
        ok = True
        for key in spec.table:
            model, _, tier = key.partition("@")
            if model not in models:
                comp.problem(
                    (*path, key),
                    f"'{key}' is not a model defined under models",
                    suggest(model, list(models)) or "models: " + ", ".join(models),
                )
                ok = False
            elif tier and tier != "standard" and tier not in models[model].speeds:
                tiers = ["standard", *models[model].speeds]
                comp.problem(
                    (*path, key),
                    f"model '{model}' has no speed tier '{tier}'",
                    suggest(tier, tiers) or "its tiers: " + ", ".join(tiers),
                )
                ok = False
        if spec.by not in self.calls:
            comp.problem(
                (*path, "by"),
                f"no call is named '{spec.by}'",
                suggest(spec.by, [k for k in self.calls if "#" not in k])
                or "name the call whose model decides this value",
            )
            return False
        return ok

    def _found(self, spec, path, named: list, v: int, vname: str):
        """The value in variant ``v`` (the same for every call of that name), or None after reporting."""
        comp = self.comp
        as_value = float if isinstance(spec, ByModel) else (lambda x: x)
        found = []
        for node in named:
            t = comp.tiers[node.tiers[v]]
            for key in (f"{t.model}@{t.speed}", t.model):
                if key in spec.table:
                    found.append(as_value(spec.table[key]))
                    break
            else:
                if spec.default is None:
                    comp.problem(
                        path,
                        f"no value for model '{t.label}': call '{spec.by}' runs on it in variant '{vname}'",
                        f"add '{t.model}: P' (or '{t.model}@{t.speed}: P') or 'default: P'",
                    )
                    return None
                found.append(as_value(spec.default))
        if any(x != found[0] for x in found):
            comp.problem(
                (*path, "by"),
                f"the calls named '{spec.by}' run on models with different values in variant '{vname}'",
                "give those calls distinct names and refer to one of them",
            )
            return None
        return found[0]
