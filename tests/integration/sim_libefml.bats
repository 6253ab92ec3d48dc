#!/usr/bin/env bats
# The libefml simulator (sim/): what it answers for a description, telemetry, events and the
# driver going away while it runs, a card unplugged, its exported ABI and its fault switches.
# Helpers: sim.bash.

load helpers
load sim
bats_require_minimum_version 1.5.0   # run --separate-stderr

setup() { sim_suite_setup; }
teardown() { teardown_scratch; }

@test "libefml answers exactly what the description says" {
  d=$(desc efml <<'EOF'
driver_version: "1.5.0.7"
cards:
  - {uuid: GCU-U53000080105, minor: 6, bus_id: "0000:9a:00.0", numa_node: 1, product: T10, memory_mib: 16000}
  - {uuid: TR6Y46010302, minor: 2, bus_id: "0000:17:00.0", numa_node: 0}
EOF
)
  sim_host "$d" "$SCRATCH/root"
  VER=1.5.0.7
  run efml '
n = c_uint32(99)
assert L.EfmlGetDevCount(byref(n)) == 3            # not initialised
assert L.EfmlInit(False) == 0
assert L.EfmlGetDevCount(byref(n)) == 0 and n.value == 2
assert L.EfmlGetDriverVer(buf) == 0 and buf.value == b"1.5.0.7"
class DeviceInfo(Structure):
    _fields_ = [("name", c_char * 128)] + [(f, c_uint32) for f in
                ("vendor_id", "device_id", "domain_id", "bus_id", "dev_id", "func_id", "logic_id")]
class DevMemInfo(Structure):
    _fields_ = [("mem_total_size", c_uint64), ("mem_used", c_uint32)]
assert sizeof(DeviceInfo) == 156 and sizeof(DevMemInfo) == 16
rows = []
for i in range(2):
    di, mi, nn, h = DeviceInfo(), DevMemInfo(), c_int32(), c_bool()
    assert L.EfmlGetDevName(i, buf) == 0; name = buf.value.decode()
    assert L.EfmlGetDevUuid(i, buf) == 0; uuid = buf.value.decode()
    assert L.EfmlGetDevInfo(i, byref(di)) == 0
    bus = f"{di.domain_id:04x}:{di.bus_id:02x}:{di.dev_id:02x}.{di.func_id:x}"
    assert L.EfmlGetDevMem(i, byref(mi)) == 0
    assert L.EfmlGetNumaNode(i, byref(nn)) == 0
    assert L.EfmlGetDevIsHealth(i, byref(h)) == 0
    rows.append(f"{name} {uuid} {bus} {di.vendor_id:x}:{di.device_id:x} {mi.mem_total_size} {mi.mem_used} {nn.value} {h.value}")
print("\n".join(rows))
assert L.EfmlGetDevName(2, buf) == 2                # index out of range
assert L.EfmlGetDevInfo(0, None) == 2               # null out-pointer
L.EfmlShutdown()
assert L.EfmlGetDevName(0, buf) == 3                # not initialised
print("ok")'
  [ "$status" -eq 0 ]
  [ "$output" = "T10 GCU-U53000080105 0000:9a:00.0 1e36:c011 16000 0 1 True
S60 TR6Y46010302 0000:17:00.0 1e36:c035 42976 0 0 True
ok" ]
}

@test "telemetry, events and driver gone/back: libefml and efsmi follow while running" {
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  "$SIM_HOST" telemetry --root "$SCRATCH/root" --card 1 temperature=77 power=150.5 usage=12.5 \
    memory_used_mib=4096 ecc_double_bit=3 pcie_link_width=16
  run bash -c "'$SCRATCH/root/usr/local/efsmi/efsmi-$VER/efsmi' -q --json-format | jq -c '.devices[1] | [.\"Temperature Info\".\"GCU Temp\", .\"Power Info\".\"Cur Power\", .\"Device Usage Info\".\"GCU Usage\", .\"Device Mem Info\".\"Used Size\", .\"RMA Info\".\"Total DBE\", .\"PCIe Info\".\"Cur Link Width\"]'"
  [ "$output" = '["77 ℃","150.5 W","12.5 %","4096 MiB",3,"X16"]' ]
  run "$SIM_HOST" telemetry --root "$SCRATCH/root" --card 0 temperature=hot
  [ "$status" -eq 1 ]
  [ "$output" = "error: 'temperature=hot': bad value 'hot' for temperature" ]
  "$SIM_HOST" driver --root "$SCRATCH/root" gone
  run efsmi_in "$SCRATCH/root" -q
  [ "$status" -ne 0 ]
  [ "$output" = "efsmi: error: the Enflame driver is not loaded" ]
  run efml 'print(L.EfmlInit(False))'
  [ "$output" = 6 ]
  "$SIM_HOST" driver --root "$SCRATCH/root" back
  run efsmi_in "$SCRATCH/root" -q
  [ "$status" -eq 0 ]
  export SIM_HOST SCRATCH
  run efml '
class Event(Structure):
    _fields_ = [("event_id", c_uint32), ("event_type", c_int), ("event_msg", c_char * 128)]
import subprocess, os
assert L.EfmlInit(False) == 0
ev = Event()
assert L.EfmlGetEvent(20, byref(ev)) != 0           # nothing new: timeout
subprocess.run([os.environ["SIM_HOST"], "event", "--root", os.environ["SCRATCH"] + "/root",
                "--card", "1", "--type", "eid", "--message", "EID 42"], check=True)
assert L.EfmlGetEvent(1000, byref(ev)) == 0
print(ev.event_id, ev.event_type, ev.event_msg.decode())'
  [ "$output" = "1 20 EID 42" ]
}

@test "unplug: a card taken out while running is gone from efsmi, libefml, /dev and sysfs" {
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  "$SIM_HOST" unplug --root "$SCRATCH/root" --card 1
  run bash -c "'$SCRATCH/root/usr/local/efsmi/efsmi-$VER/efsmi' -q --json-format | jq '.devices | length'"
  [ "$status" -eq 0 ]
  [ "$output" = 1 ]
  run efml 'n = c_uint32(); print(L.EfmlInit(False), L.EfmlGetDevCount(byref(n)), n.value)'
  [ "$output" = "0 0 1" ]
  [ -c "$SCRATCH/root/dev/gcu0" ]
  [ ! -e "$SCRATCH/root/dev/gcu1" ]
  [ "$(ls "$SCRATCH/root/sys/bus/pci/devices" | wc -l)" -eq 1 ]
  run "$SIM_HOST" unplug --root "$SCRATCH/root" --card 1
  [ "$status" -eq 1 ]
  [ "$output" = "error: --card 1: the host has 1 cards" ]
}

@test "libefml exports only the libefml ABI (efml.h names)" {
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  run bash -c "nm -D --defined-only '$(efml_in "$SCRATCH/root")' | awk '{print \$3}' | LC_ALL=C sort | tr '\n' ' '"
  [ "$output" = "EfmlGetDevClk EfmlGetDevCount EfmlGetDevDtuUsage EfmlGetDevEccStatus EfmlGetDevInfo EfmlGetDevIsHealth EfmlGetDevMem EfmlGetDevName EfmlGetDevPwr EfmlGetDevSn EfmlGetDevTemp EfmlGetDevTempV2 EfmlGetDevUuid EfmlGetDriverVer EfmlGetEvent EfmlGetNumaNode EfmlGetPcieLinkInfo EfmlGetProcessInfo EfmlInit EfmlShutdown efmlDeviceGetCount_v2 efmlDeviceGetHandleByIndex_v2 efmlDeviceGetMemoryInfo efmlDeviceGetName efmlDeviceGetPowerUsage efmlInit " ]
}

@test "fault efml_missing_symbols: dlsym fails for those, the others still work" {
  build_with_faults "efml_missing_symbols: [EfmlGetDevUuid, EfmlGetNumaNode]"
  run efml '
for s in ("EfmlGetDevUuid", "EfmlGetNumaNode"):
    assert not hasattr(L, s), s
assert L.EfmlInit(False) == 0
n = c_uint32()
assert L.EfmlGetDevCount(byref(n)) == 0 and n.value == 2
assert L.EfmlGetDevName(1, buf) == 0 and buf.value == b"S60"
assert L.EfmlGetDevSn(1, buf) == 0 and buf.value != b""
print("ok")'
  [ "$output" = ok ]
  # also through dlopen/dlsym of the soname symlink resolved inside the root
  [ -z "$(nm -D --defined-only "$(efml_in "$SCRATCH/root")" | grep -w 'EfmlGetDevUuid\|EfmlGetNumaNode')" ]
}

@test "fault efml_init_fails: EfmlInit returns 1 and nothing else answers" {
  build_with_faults "efml_init_fails: true"
  run efml '
n = c_uint32()
print(L.EfmlInit(False), L.EfmlGetDevCount(byref(n)))'
  [ "$output" = "1 3" ]
}
