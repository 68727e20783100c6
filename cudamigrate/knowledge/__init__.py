"""The rule set as loaded: YAML files validated against the vocabulary, the load cache, the CUDA change catalog."""
