# The two commands a new machine needs: `make demo` and `make test` (as root on Debian 12).
# Everything else is a step they call.
PRESET ?= dev
BUILD  := build/$(PRESET)

.PHONY: all deps configure build host-binaries packages test unit integration demo demo-cluster e2e bench fuzz clean lint asan images print-images node-exporter-image print-node-exporter-image

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@test -f $(BUILD)/CMakeCache.txt || cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET)

# The shim, the hook and enflame-ctk alone, static, for any Linux host (docs/host-binaries.md):
# build/static, configured every time so the tree has the preset's flags. ARCH=arm64 builds
# them for aarch64 instead (preset static-arm64, build/static-arm64: Debian's cross compiler
# and the arm64 sysroot scripts/arm64-sysroot.sh unpacks once into build/arm64-sysroot);
# ARCH=all builds both.
ARCH ?= x86_64
HOST_ARCHES := $(if $(filter all,$(ARCH)),x86_64 arm64,$(ARCH))
HOST_PRESET = $(if $(filter arm64 aarch64,$(1)),static-arm64,$(if $(filter x86_64 amd64,$(1)),static,$(error ARCH=$(1): x86_64, arm64 or all)))
host-binaries: deps
	@set -e; for p in $(foreach a,$(HOST_ARCHES),$(call HOST_PRESET,$(a))); do \
	  if [ $$p = static-arm64 ]; then scripts/arm64-sysroot.sh; fi; \
	  cmake --preset $$p >/dev/null; cmake --build --preset $$p; done

# The host packages: .deb and .rpm of the static binaries, the same files in both, into
# build/packages (the full Debian package of every daemon: `cpack -G DEB` in build/dev);
# ARCH=arm64 packs the arm64 ones (_arm64.deb, .aarch64.rpm), ARCH=all both.
packages: host-binaries
	@set -e; for p in $(foreach a,$(HOST_ARCHES),$(call HOST_PRESET,$(a))); do \
	  (cd build/$$p && cpack -B $(CURDIR)/build/packages >/dev/null); done
	@ls build/packages/*.deb build/packages/*.rpm

unit: build
	@cd $(BUILD) && ctest --output-on-failure -j2

# host_binaries.bats and host_binaries_arm64.bats run the static host binaries of both.
integration: build
	@$(MAKE) -s host-binaries ARCH=all
	@BUILD_DIR=$(CURDIR)/$(BUILD) scripts/run-integration.sh

# scripts/run-tests.sh builds $(BUILD) itself, to time that stage with the others.
test: configure
	@BUILD_DIR=$(CURDIR)/$(BUILD) scripts/run-tests.sh

# The demo builds only what it runs (the CLI, the shim, the simulated host and its efsmi and
# libefml), not the tests, benchmarks or Kubernetes daemons.
DEMO_TARGETS := enflame-ctk enflame-container-runtime enflame-sim-host enflame-sim-efsmi efml-sim
demo: configure
	@cmake --build --preset $(PRESET) --target $(DEMO_TARGETS)
	@BUILD_DIR=$(CURDIR)/$(BUILD) scripts/demo.sh

# The Kubernetes half (needs the Kubernetes binaries a user names in ENFLAME_KUBE_BIN, README):
# a real one-node cluster, `kubectl apply -k deployments/`, the example pod, then all removed.
demo-cluster: configure
	@cmake --build --preset $(PRESET) --target enflame-sim-host enflame-sim-efsmi efml-sim
	@BUILD_DIR=$(CURDIR)/$(BUILD) scripts/demo-cluster.sh

# The end-to-end suite on that cluster alone (`make test` runs it too, among the bats files).
e2e: build
	@BUILD_DIR=$(CURDIR)/$(BUILD) bats --tap tests/integration/e2e.bats

# Benchmarks (bench/README.md): a release build (no tests) of just what bench/ runs, then one
# table. The release preset builds no test tools: the EPP bench's gateway stand-in (epp-gateway,
# the load it drives, not what it measures) comes from the dev build.
BENCH_TARGETS := enflame-ctk enflame-container-runtime enflame-container-runtime-hook \
  enflame-sim-host enflame-sim-efsmi efml-sim discovery_bench enflame-feature-discovery enflame-epp
bench: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release --target $(BENCH_TARGETS)
	@test -f build/dev/CMakeCache.txt || cmake --preset dev >/dev/null
	@cmake --build --preset dev --target epp-gateway
	@BUILD_DIR=$(CURDIR)/build/release bench/run.sh

fuzz: deps
	@scripts/fuzz.sh

# Static checks over libinject/ (clang-tidy 14 with .clang-tidy, cppcheck): non-zero on a finding.
lint: configure
	@BUILD_DIR=$(CURDIR)/$(BUILD) scripts/lint.sh

# ASan + UBSan build (build/asan): unit tests plus the shim and hook integration tests
# (`make test` runs this too, unless ENFLAME_TEST_ASAN=0).
asan: deps
	@scripts/run-asan.sh

# OCI images (scripts/build-images.sh): one image holding every daemon (the manifests in
# deployments/ name it through kustomize's `images:`), saved as an OCI archive under build/images/.
# Images carry the release build (optimised, stripped), whatever PRESET is: build/release, and
# there only the targets `cmake --install` puts in the image (every install(TARGETS) rule), plus
# the static host binaries the installer copies onto nodes (build/static, docs/host-binaries.md).
VERSION       := $(shell grep -m1 -o 'project.enflame-container-toolkit VERSION [0-9.]*' CMakeLists.txt | cut -d' ' -f3)
IMAGE_REPO    := enflame-container-toolkit
IMAGE_NAMES   := enflame-toolkit
IMAGE_TARGETS := enflame-ctk enflame-container-runtime enflame-container-runtime-hook \
  enflame-device-plugin enflame-dra-plugin enflame-feature-discovery enflame-gcu-exporter \
  enflame-nri-plugin enflame-gpu-operator enflame-drs-manager
# ARCH=arm64: the same image for arm64 nodes (build/images/enflame-toolkit-arm64.oci.tar) from the
# cross build build/release-arm64 (preset release-arm64, its sysroot scripts/arm64-sysroot.sh
# --image: build/arm64-sysroot-image) and build/static-arm64. ARCH=all: both, and the OCI index
# naming the two (build/images/enflame-toolkit.index.oci.tar), which a registry or containerd
# serves to either kind of node under the one name. Without ARCH: x86_64 alone, as `make test` does.
IMAGE_ARCHES = $(if $(filter all,$(ARCH)),x86_64 arm64,$(if $(filter arm64 aarch64,$(ARCH)),arm64,x86_64))
images: deps host-binaries
ifneq ($(filter x86_64,$(IMAGE_ARCHES)),)
	@test -f build/release/CMakeCache.txt || cmake --preset release >/dev/null
	@cmake --build --preset release --target $(IMAGE_TARGETS)
	@BUILD_DIR=$(CURDIR)/build/release scripts/build-images.sh x86_64
endif
ifneq ($(filter arm64,$(IMAGE_ARCHES)),)
	@scripts/arm64-sysroot.sh --image
	@test -f build/release-arm64/CMakeCache.txt || cmake --preset release-arm64 >/dev/null
	@cmake --build --preset release-arm64 --target $(IMAGE_TARGETS)
	@BUILD_DIR=$(CURDIR)/build/release-arm64 HOST_BINARIES_DIR=$(CURDIR)/build/static-arm64 scripts/build-images.sh arm64
endif
ifeq ($(ARCH),all)
	@scripts/build-images.sh index
endif
print-images:
	@for n in $(IMAGE_NAMES); do echo $(IMAGE_REPO)/$$n:$(VERSION); done
# The system layer (deployments/node-exporter/): Debian's prometheus-node-exporter in an image of
# its own, build/images/node-exporter.oci.tar (scripts/build-node-exporter-image.sh).
node-exporter-image: deps
	@scripts/build-node-exporter-image.sh
print-node-exporter-image:
	@echo $(IMAGE_REPO)/node-exporter:$(VERSION)

clean:
	rm -rf build
