"""``agentsim fit``: a scenario, in the public vocabulary, that reproduces a population of recorded sessions.

Replay answers "what would *these* sessions have taken"; a fitted scenario answers for next month's
volume, a shared account's limits, another model, a sweep. The pieces:

* :mod:`agentsim.fit.population`: recorded sessions (any format agentsim reads) as threads of *steps*
  (a call, the tools and subagents it asked for, the human's idle time and the client's overhead
  after it), with the quantities the scenario is fitted to.
* :mod:`agentsim.fit.speeds`: each model's recorded speeds as a calibrated profile.
* :mod:`agentsim.fit.build`: the scenario itself (and the samples file its empirical distributions read).
* :mod:`agentsim.fit.report`: the fitted scenario simulated, compared quantity by quantity with the
  recorded (or held-back) sessions.
* :mod:`agentsim.fit.agent_fit`: the whole, as ``agentsim fit`` runs it.

The layer sits above ``replay`` and ``measure`` (it prices the recorded sessions with replay's
identity replay) and below ``viz`` and ``cli``.
"""
