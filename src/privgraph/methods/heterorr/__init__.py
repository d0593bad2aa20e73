"""HeteroRR (Tran et al.): FeatureRR, EdgeRR and their baselines."""
