"""Figures (DataFrame in, matplotlib Figure out), the ``plot_*`` methods of result objects, result
folders and the HTML report.
"""
