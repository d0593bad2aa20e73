"""HeteDP (../shared/papers/hetedp.txt): DP feature and topology learning on heterogeneous graphs."""
