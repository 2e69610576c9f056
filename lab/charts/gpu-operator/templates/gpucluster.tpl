{{- /*
(Named .tpl: a Go template, not YAML.) The GPUCluster (nvidia.com/v1alpha1), the DRA-based stack
the real chart deploys with gpuCluster.deployCR at v26.7.0 (NVIDIA/gpu-operator,
deployments/gpu-operator/templates/gpucluster.yaml): the draDriver values land in spec.draDriver,
dcgm and dcgmExporter in their sections, hostPaths.driverInstallDir and the daemonsets values as
they are. The name is fixed: the CRD admits the singleton gpu-cluster only.
*/ -}}
{{- if .Values.gpuCluster.deployCR }}
apiVersion: nvidia.com/v1alpha1
kind: GPUCluster
metadata:
  name: gpu-cluster
  labels:
    {{- include "standin.labels" . | nindent 4 }}
    app.kubernetes.io/component: gpu-operator
spec:
  draDriver:
    {{- include "standin.operand" (dict "c" .Values.draDriver) | trim | nindent 4 }}
    {{- with .Values.draDriver.featureGates }}
    featureGates: {{ toYaml . | nindent 6 }}
    {{- end }}
    {{- with .Values.draDriver.gpus.kubeletPlugin }}
    gpus:
      kubeletPlugin: {{ toYaml . | nindent 8 }}
    {{- end }}
    computeDomains:
      enabled: {{ .Values.draDriver.computeDomains.enabled }}
  dcgm:
    {{- include "standin.operand" (dict "c" .Values.dcgm) | trim | nindent 4 }}
  dcgmExporter:
    {{- include "standin.operand" (dict "c" (omit .Values.dcgmExporter "service" "serviceMonitor")) | trim | nindent 4 }}
  hostPaths:
    driverInstallDir: {{ .Values.hostPaths.driverInstallDir }}
  daemonsets: {{ toYaml .Values.daemonsets | nindent 4 }}
{{- end }}
