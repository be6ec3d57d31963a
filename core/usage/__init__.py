"""Usage and cost: what each model call held, cost and counted.

- `figures`: every token count or cost from the API or a file, checked where it enters (a bad one is
  None: unknown).
- `prices`: the API's usage of one call, prices per model, context windows.
- `timeline`: one sample per model call, as the agent records it.

The samples and counts themselves are value types (core/values/samples.py); asking the model for a
count or its window is core/model/counting.py.
"""
