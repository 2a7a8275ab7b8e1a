"""What a suite's containers look like to other tools: a compose file (`compose`) and
Kubernetes manifests (`k8s`), each folded from the isolation table, with nothing run."""
