{{- /* The operator's Deployment, as the real chart's templates/operator.yaml names and labels it; in the
lab nothing runs it (lab/cluster/play_operator.py writes the ClusterPolicy's status instead). */ -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gpu-operator
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "standin.labels" . | nindent 4 }}
    app.kubernetes.io/component: gpu-operator
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/component: gpu-operator
      app: gpu-operator
  template:
    metadata:
      labels:
        {{- include "standin.labels" . | nindent 8 }}
        app.kubernetes.io/component: gpu-operator
        app: gpu-operator
    spec:
      serviceAccountName: gpu-operator
      {{- with .Values.operator.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- with .Values.operator.imagePullSecrets }}
      imagePullSecrets:
        {{- range . }}
        - name: {{ . }}
        {{- end }}
      {{- end }}
      containers:
        - name: gpu-operator
          image: {{ printf "%s/%s:%s" .Values.operator.repository .Values.operator.image (.Values.operator.version | default .Chart.AppVersion) | quote }}
          imagePullPolicy: {{ .Values.operator.imagePullPolicy }}
          command: ["gpu-operator"]
          args: ["--leader-elect"]
          env:
            - name: WATCH_NAMESPACE
              value: ""
            - name: OPERATOR_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            - name: DRIVER_MANAGER_IMAGE
              value: {{ printf "%s/%s:%s" .Values.driver.manager.repository .Values.driver.manager.image .Values.driver.manager.version | quote }}
      {{- with .Values.operator.nodeSelector }}
      nodeSelector: {{ toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.operator.tolerations }}
      tolerations: {{ toYaml . | nindent 8 }}
      {{- end }}
