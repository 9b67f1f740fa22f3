"""From a scenario to a plan: node types with stable ids, tiers, distributions, the random draws of
a block of runs, provider accounts (limits); ``validation.load`` reads, validates and compile-checks a file.
"""
