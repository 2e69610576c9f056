{{- /*
(Named .tpl: a Go template, not YAML; Helm renders every templates/ file not starting with "_".)
The ClusterPolicy, rendered from the values the way the real chart's templates/clusterpolicy.yaml
does at v26.7.0 (NVIDIA/gpu-operator, deployments/gpu-operator/templates/clusterpolicy.yaml): the
same values keys land in the same spec fields. Sections the gpu_operator role never sets (vGPU,
Kata, VFIO, confidential computing, sandbox device plugins) are left out; the CRD does not require
them.
*/ -}}
{{- if .Values.clusterPolicy.deployCR }}
apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata:
  name: cluster-policy
  labels:
    {{- include "standin.labels" . | nindent 4 }}
    app.kubernetes.io/component: gpu-operator
spec:
  hostPaths:
    {{- toYaml .Values.hostPaths | nindent 4 }}
  operator:
    {{- with .Values.operator.runtimeClass }}
    runtimeClass: {{ . }}
    {{- end }}
    {{- with .Values.operator.defaultRuntime }}
    defaultRuntime: {{ . }}
    {{- end }}
  daemonsets:
    labels:
      app.kubernetes.io/managed-by: gpu-operator
      helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
    {{- with .Values.daemonsets.tolerations }}
    tolerations: {{ toYaml . | nindent 6 }}
    {{- end }}
    {{- with .Values.daemonsets.priorityClassName }}
    priorityClassName: {{ . }}
    {{- end }}
    {{- with .Values.daemonsets.updateStrategy }}
    updateStrategy: {{ . }}
    {{- end }}
    {{- with .Values.daemonsets.rollingUpdate }}
    rollingUpdate:
      maxUnavailable: {{ .maxUnavailable | quote }}
    {{- end }}
  validator:
    {{- include "standin.operand" (dict "c" .Values.validator "fallback" .Chart.AppVersion) | trim | nindent 4 }}
    {{- with .Values.validator.plugin }}
    plugin:
      env: {{ toYaml (.env | default list) | nindent 8 }}
    {{- end }}
    {{- with .Values.validator.cuda }}
    cuda:
      env: {{ toYaml (.env | default list) | nindent 8 }}
    {{- end }}
  mig:
    {{- with .Values.mig.strategy }}
    strategy: {{ . }}
    {{- end }}
  psa:
    enabled: {{ .Values.psa.enabled }}
  cdi:
    enabled: {{ .Values.cdi.enabled }}
    {{- if and .Values.cdi.enabled .Values.cdi.nriPluginEnabled }}
    nriPluginEnabled: true
    {{- end }}
  driver:
    enabled: {{ .Values.driver.enabled }}
    useNvidiaDriverCRD: {{ .Values.driver.nvidiaDriverCRD.enabled }}
    {{- if not .Values.driver.nvidiaDriverCRD.enabled }}
    kernelModuleType: {{ .Values.driver.kernelModuleType }}
    usePrecompiled: {{ .Values.driver.usePrecompiled }}
    {{- include "standin.operand" (dict "c" (omit .Values.driver "enabled")) | trim | nindent 4 }}
    rdma:
      enabled: {{ .Values.driver.rdma.enabled }}
      useHostMofed: {{ .Values.driver.rdma.useHostMofed }}
    manager:
      {{- include "standin.operand" (dict "c" .Values.driver.manager) | trim | nindent 6 }}
    {{- end }}
    {{- with .Values.driver.upgradePolicy }}
    upgradePolicy:
      autoUpgrade: {{ .autoUpgrade | default false }}
      maxParallelUpgrades: {{ .maxParallelUpgrades | default 0 }}
      maxUnavailable: {{ .maxUnavailable | default "25%" }}
      waitForCompletion:
        timeoutSeconds: {{ .waitForCompletion.timeoutSeconds }}
      podDeletion:
        force: {{ .gpuPodDeletion.force | default false }}
        timeoutSeconds: {{ .gpuPodDeletion.timeoutSeconds }}
        deleteEmptyDir: {{ .gpuPodDeletion.deleteEmptyDir | default false }}
      drain:
        enable: {{ .drain.enable | default false }}
        force: {{ .drain.force | default false }}
        timeoutSeconds: {{ .drain.timeoutSeconds }}
        deleteEmptyDir: {{ .drain.deleteEmptyDir | default false }}
    {{- end }}
  toolkit:
    {{- include "standin.operand" (dict "c" .Values.toolkit) | trim | nindent 4 }}
    {{- with .Values.toolkit.installDir }}
    installDir: {{ . }}
    {{- end }}
  devicePlugin:
    {{- include "standin.operand" (dict "c" .Values.devicePlugin) | trim | nindent 4 }}
    {{- if .Values.devicePlugin.config.name }}
    config:
      name: {{ .Values.devicePlugin.config.name | quote }}
      default: {{ .Values.devicePlugin.config.default | quote }}
    {{- end }}
  dcgm:
    {{- include "standin.operand" (dict "c" .Values.dcgm) | trim | nindent 4 }}
  dcgmExporter:
    {{- include "standin.operand" (dict "c" .Values.dcgmExporter) | trim | nindent 4 }}
    {{- with .Values.dcgmExporter.serviceMonitor }}
    serviceMonitor: {{ toYaml . | nindent 6 }}
    {{- end }}
    {{- with .Values.dcgmExporter.service }}
    service: {{ toYaml . | nindent 6 }}
    {{- end }}
  gfd:
    {{- include "standin.operand" (dict "c" .Values.gfd) | trim | nindent 4 }}
  migManager:
    {{- include "standin.operand" (dict "c" .Values.migManager) | trim | nindent 4 }}
    {{- with .Values.migManager.config }}
    config:
      {{- with .name }}
      name: {{ . }}
      {{- end }}
      default: {{ .default | quote }}
    {{- end }}
  nodeStatusExporter:
    {{- include "standin.operand" (dict "c" .Values.nodeStatusExporter "fallback" .Chart.AppVersion) | trim | nindent 4 }}
  gds:
    {{- include "standin.operand" (dict "c" .Values.gds) | trim | nindent 4 }}
  gdrcopy:
    {{- include "standin.operand" (dict "c" .Values.gdrcopy) | trim | nindent 4 }}
  sandboxWorkloads:
    enabled: {{ .Values.sandboxWorkloads.enabled }}
    {{- with .Values.sandboxWorkloads.defaultWorkload }}
    defaultWorkload: {{ . }}
    {{- end }}
    {{- with .Values.sandboxWorkloads.mode }}
    mode: {{ . | quote }}
    {{- end }}
{{- end }}
