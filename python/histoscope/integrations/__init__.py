"""Trainer integrations: callbacks that watch the model and log to a histoscope run.

Each lives in its own module, imported on demand so that histoscope never
imports a trainer it does not need:

- `histoscope.integrations.lightning.HistoscopeCallback` for PyTorch Lightning;
- `histoscope.integrations.transformers.HistoscopeCallback` for Hugging Face's ``Trainer``;
- `histoscope.integrations.keras.HistoscopeCallback` for Keras 3's ``model.fit``.
"""
