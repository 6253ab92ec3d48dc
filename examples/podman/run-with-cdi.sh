#!/bin/sh
# Two ways to give a podman container Enflame card 0.
set -eu
IMAGE=${IMAGE:-docker.io/library/busybox:1.36}

# 1. CDI (podman 4.1+ applies the spec itself): generate the spec once per boot or driver
#    change (enflame-cdi-refresh.service does that), then name the device.
enflame-ctk cdi generate --output /var/run/cdi/enflame.com-gpu.yaml
podman run --rm --device enflame.com/gpu=0 "$IMAGE" ls -l /dev/gcu0 /dev/gcuctl

# 2. The runtime shim with the de facto environment variable.
podman run --rm --runtime /usr/bin/enflame-container-runtime \
    -e ENFLAME_VISIBLE_DEVICES=0 "$IMAGE" ls -l /dev/gcu0 /dev/gcuctl
