{{- /*
(Named .tpl: a Go template, not YAML.) The real chart's refusals at v26.7.0 that the role's values
can meet (NVIDIA/gpu-operator, deployments/gpu-operator/templates/validations.yaml): only one of
the ClusterPolicy and the GPUCluster, and an operator-managed driver with a GPUCluster only
through NVIDIADriver objects.
*/ -}}
{{- if and .Values.clusterPolicy.deployCR .Values.gpuCluster.deployCR }}
{{- fail "clusterPolicy.deployCR and gpuCluster.deployCR cannot both be true (stand-in of the chart's validation)" }}
{{- end }}
{{- if and .Values.gpuCluster.deployCR .Values.driver.enabled (not .Values.driver.nvidiaDriverCRD.enabled) }}
{{- fail "a GPUCluster with driver.enabled needs driver.nvidiaDriverCRD.enabled (stand-in of the chart's validation)" }}
{{- end }}
