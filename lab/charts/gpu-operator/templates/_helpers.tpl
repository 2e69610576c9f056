{{/* Labels on every object of the stand-in. */}}
{{- define "standin.labels" -}}
app.kubernetes.io/name: gpu-operator
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{- end -}}

{{/*
The image and pod fields of one operand section, in ClusterPolicy form, for the keys given in
its values. Called with (dict "c" <values section> "fallback" <version when none is set>).
*/}}
{{- define "standin.operand" -}}
{{- $c := .c -}}
{{- if hasKey $c "enabled" }}
enabled: {{ $c.enabled }}
{{- end }}
{{- with $c.repository }}
repository: {{ . }}
{{- end }}
{{- with $c.image }}
image: {{ . }}
{{- end }}
{{- with ($c.version | default .fallback) }}
version: {{ . | quote }}
{{- end }}
{{- with $c.imagePullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- with $c.imagePullSecrets }}
imagePullSecrets: {{ toYaml . | nindent 2 }}
{{- end }}
{{- with $c.env }}
env: {{ toYaml . | nindent 2 }}
{{- end }}
{{- with $c.args }}
args: {{ toYaml . | nindent 2 }}
{{- end }}
{{- with $c.resources }}
resources: {{ toYaml . | nindent 2 }}
{{- end }}
{{- if $c.hostNetwork }}
hostNetwork: true
{{- end }}
{{- end -}}
