"""HeteDP (Wei et al., "Heterogeneous Graph Neural Network for Privacy-Preserving Recommendation", ICDM 2022):
DP feature and topology learning on heterogeneous graphs."""
