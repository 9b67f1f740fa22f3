"""Questions asked of results: trade-offs and break-even, sweeps, optimisation, critical-path
timelines. Calls ``simulate()``; never draws figures.
"""
