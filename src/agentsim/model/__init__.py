"""The scenario model: the vocabulary (pydantic), reading files with the line of every key and
errors that point at them, speed profiles. Imports nothing else of agentsim.
"""
