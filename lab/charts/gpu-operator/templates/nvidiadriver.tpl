{{- /* The chart's default NVIDIADriver (real chart: templates/nvidiadriver.yaml at v26.7.0), deployed when the
driver comes from NVIDIADriver objects and deployDefaultCR is on; the gpu_operator role turns
deployDefaultCR off and applies one NVIDIADriver per node group instead. */ -}}
{{- if and .Values.driver.enabled .Values.driver.nvidiaDriverCRD.enabled .Values.driver.nvidiaDriverCRD.deployDefaultCR }}
apiVersion: nvidia.com/v1alpha1
kind: NVIDIADriver
metadata:
  name: default
  labels:
    {{- include "standin.labels" . | nindent 4 }}
spec:
  default: true
  driverType: {{ .Values.driver.nvidiaDriverCRD.driverType | default "gpu" }}
  repository: {{ .Values.driver.repository }}
  image: {{ .Values.driver.image }}
  version: {{ .Values.driver.version | quote }}
  kernelModuleType: {{ .Values.driver.kernelModuleType }}
  usePrecompiled: {{ .Values.driver.usePrecompiled }}
  rdma:
    enabled: {{ .Values.driver.rdma.enabled }}
    useHostMofed: {{ .Values.driver.rdma.useHostMofed }}
  {{- with .Values.daemonsets.tolerations }}
  tolerations: {{ toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
