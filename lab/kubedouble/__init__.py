"""A Kubernetes API test double for the gpufabric.rollout lab and tests.

An aiohttp server that answers the subset of the kube-apiserver REST API that kubernetes.core,
the kubernetes Python client, kubectl and Helm 3 use. See README.md for what it does and does not do.
"""

__version__ = "1.0.0"
