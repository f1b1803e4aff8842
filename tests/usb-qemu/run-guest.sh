#!/usr/bin/env bash
# Boot a qemu guest (TCG) in which Linux's dummy_hcd + a FunctionFS gadget play a USB device and a
# host-side program talks to it over the real USB stack (usbfs, libusb/rusb).
#
#   run-guest.sh --gadget BIN --host BIN [--vid 0xADD1] [--pid 0x0001] [--product STR]
#                [--gadget-arg ARG]... [--timeout SECS] [--mem MiB] [--high-speed] [--smp N]
#                [-- HOST_ARGS...]
#
# What it does:
#  1. finds Debian's current kernel package (`apt-cache depends linux-image-amd64`), downloads it with
#     `apt-get download` once and keeps vmlinuz plus the USB gadget modules (decompressed, with their
#     load order) in a cache dir: $WAVESCOPE_USB_QEMU_CACHE, else $XDG_CACHE_HOME/wavescope/usb-qemu,
#     else ~/.cache/wavescope/usb-qemu. Nothing is written into the source tree.
#  2. builds a busybox initramfs holding busybox, the two programs and every shared library `ldd`
#     names for them (glibc binaries, no musl target needed), plus an /init that loads the modules,
#     creates a configfs gadget with the given ids/strings and one FunctionFS function, starts the
#     gadget program (arguments: FFS_MOUNT READY_FILE GADGET_ARGS...), binds the gadget to dummy_udc.0 once the
#     program has written its descriptors, waits for enumeration and runs the host program.
#  3. boots it with `qemu-system-x86_64 -accel tcg` under a timeout; the guest prints exactly one line
#     `USB-QEMU-RESULT: PASS` or `USB-QEMU-RESULT: FAIL <why>` on the serial console.
#
# Exit status: 0 PASS, 1 FAIL (or no result line: timeout, guest panic), 2 usage error,
# 77 a prerequisite is missing (qemu, busybox, apt/kernel package): the caller decides whether that
# is a skip or a failure.
set -euo pipefail

die() { echo "run-guest: $*" >&2; exit 2; }
missing() { echo "run-guest: missing prerequisite: $*" >&2; exit 77; }

gadget="" host="" vid="0xADD1" pid="0x0001" product="custom v0.1" manufacturer="tinygrad"
serial="wavescope-dummy" timeout_s=150 mem=1536 speed="super" smp=1
host_args=() gadget_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --gadget) gadget="$2"; shift 2 ;;
    --host) host="$2"; shift 2 ;;
    --gadget-arg) gadget_args+=("$2"); shift 2 ;;
    --vid) vid="$2"; shift 2 ;;
    --pid) pid="$2"; shift 2 ;;
    --product) product="$2"; shift 2 ;;
    --manufacturer) manufacturer="$2"; shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    --mem) mem="$2"; shift 2 ;;
    --high-speed) speed="high"; shift ;;
    # guest CPUs: with 2 the gadget (device side) and the host program run in parallel
    --smp) smp="$2"; shift 2 ;;
    --) shift; host_args=("$@"); break ;;
    *) die "unknown argument $1" ;;
  esac
done
[ -n "$gadget" ] && [ -x "$gadget" ] || die "--gadget must name an executable"
[ -n "$host" ] && [ -x "$host" ] || die "--host must name an executable"

command -v qemu-system-x86_64 >/dev/null || missing "qemu-system-x86_64 (Debian: qemu-system-x86)"
busybox=$(command -v busybox || true)
[ -n "$busybox" ] || missing "busybox (Debian: busybox-static)"
command -v ldd >/dev/null || missing "ldd"
command -v cpio >/dev/null || [ -n "$busybox" ] || missing "cpio"

cache="${WAVESCOPE_USB_QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wavescope/usb-qemu}"
mkdir -p "$cache"

# ---- 1. kernel + modules -------------------------------------------------------------------------
# The modules the guest needs; their dependencies are added from each module's own `depends=`
# (.modinfo) because the package ships no modules.dep (depmod runs in its postinst).
wanted_modules="usb-common usbcore udc-core configfs libcomposite dummy_hcd usb_f_fs"

command -v apt-cache >/dev/null || missing "apt-cache (the kernel comes from Debian's linux-image-amd64)"
kpkg="${WAVESCOPE_USB_QEMU_KERNEL_PKG:-$(apt-cache depends linux-image-amd64 2>/dev/null \
  | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')}"
[ -n "$kpkg" ] || missing "kernel package (apt-cache depends linux-image-amd64 names none; run apt-get update)"
kdir="$cache/$kpkg"

# Decompress one module file (.ko, .ko.xz, .ko.zst, .ko.gz) to stdout.
ko_cat() {
  case "$1" in
    *.ko) cat "$1" ;;
    *.ko.xz) xz -dc "$1" ;;
    *.ko.zst) zstd -dcq "$1" ;;
    *.ko.gz) gzip -dc "$1" ;;
    *) echo "run-guest: unknown module compression: $1" >&2; return 1 ;;
  esac
}

# One fetch at a time (tests run in parallel and share the cache).
if command -v flock >/dev/null; then
  exec 9>"$cache/.lock"
  flock 9
fi
if [ ! -s "$kdir/order" ]; then
  echo "run-guest: fetching $kpkg into $kdir" >&2
  command -v apt-get >/dev/null || missing "apt-get"
  command -v dpkg-deb >/dev/null || missing "dpkg-deb"
  tmp=$(mktemp -d "$cache/fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download "$kpkg" >/dev/null 2>"$tmp/apt.err") \
    || { cat "$tmp/apt.err" >&2; missing "apt-get download $kpkg failed"; }
  dpkg-deb -x "$tmp"/*.deb "$tmp/root"
  vmlinuz=$(ls "$tmp"/root/boot/vmlinuz-* | head -n1)
  moddir=$(ls -d "$tmp"/root/lib/modules/* 2>/dev/null | head -n1)
  [ -z "$moddir" ] && moddir=$(ls -d "$tmp"/root/usr/lib/modules/* | head -n1)
  mkdir -p "$tmp/out/modules"
  # name (with '-' and '_' equivalent) -> file
  find "$moddir" -name '*.ko*' > "$tmp/all"
  find_mod() {
    local n="${1//-/_}"
    # file names may spell '_' as '-': match both, the way modprobe does
    grep -E "/${n//_/[-_]}\.ko(\.xz|\.zst|\.gz)?\$" "$tmp/all" | head -n1 | grep .
  }
  order=()
  visiting=" "
  add_mod() {
    local m="${1//-/_}" f deps d
    case " ${order[*]:-} " in *" $m "*) return 0 ;; esac
    case "$visiting" in *" $m "*) echo "run-guest: module dependency cycle at $m" >&2; exit 1 ;; esac
    visiting="$visiting$m "
    f=$(find_mod "$m") || { echo "run-guest: module $m not in $kpkg" >&2; exit 1; }
    ko_cat "$f" > "$tmp/out/modules/$m.ko"
    deps=$(tr '\0' '\n' < "$tmp/out/modules/$m.ko" | sed -n 's/^depends=//p' | head -n1 | tr ',' ' ')
    for d in $deps; do add_mod "$d"; done
    order+=("$m")
  }
  for m in $wanted_modules; do add_mod "$m"; done
  cp "$vmlinuz" "$tmp/out/vmlinuz"
  printf '%s\n' "${order[@]}" > "$tmp/out/order"
  rm -rf "$kdir"
  mv "$tmp/out" "$kdir"
  rm -rf "$tmp"
  trap - EXIT
fi

[ -n "$(command -v flock)" ] && flock -u 9

# ---- 2. initramfs --------------------------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/usb-qemu.XXXXXX")
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root"/{bin,dev,proc,sys,run,tmp,modules,ffs}

# Copy a binary and every library ldd lists for it (plus the loader) to the same paths in the guest.
copy_with_libs() {
  local bin="$1" dest="$2" lib
  cp -L "$bin" "$root$dest"
  # (a static binary: ldd fails and lists nothing)
  { ldd "$bin" 2>/dev/null || true; } | { grep -oE '(/[^ ]+)' || true; } | while read -r lib; do
    [ -e "$lib" ] || continue
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}
copy_with_libs "$busybox" /bin/busybox
copy_with_libs "$gadget" /bin/usb-gadget
copy_with_libs "$host" /bin/usb-host
cp "$kdir"/modules/*.ko "$root/modules/"
cp "$kdir/order" "$root/modules/order"

# Shell-quote the host arguments into the init script.
quote_all() { local a out=""; for a in "$@"; do out="$out '${a//\'/\'\\\'\'}'"; done; echo "$out"; }
qargs=$(quote_all "${host_args[@]+"${host_args[@]}"}")
gargs=$(quote_all "${gadget_args[@]+"${gadget_args[@]}"}")
dummy_params=""
[ "$speed" = super ] && dummy_params="is_super_speed=1"

cat > "$root/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# The emulated GPU maps its whole VRAM up front and touches little of it.
echo 1 > /proc/sys/vm/overcommit_memory
result() { echo "USB-QEMU-RESULT: \$*"; sync; poweroff -f; }
fail() { echo "--- dmesg (tail)"; dmesg | tail -n 40; result "FAIL \$*"; }
for m in \$(cat /modules/order); do
  params=""
  [ "\$m" = dummy_hcd ] && params="$dummy_params"
  insmod /modules/\$m.ko \$params || fail "insmod \$m"
done
mount -t configfs configfs /sys/kernel/config || fail "mount configfs"
G=/sys/kernel/config/usb_gadget/g1
mkdir \$G && cd \$G || fail "configfs gadget"
echo $vid > idVendor
echo $pid > idProduct
echo 0x0100 > bcdDevice
echo 0x0320 > bcdUSB
mkdir strings/0x409
echo '$manufacturer' > strings/0x409/manufacturer
echo '$product' > strings/0x409/product
echo '$serial' > strings/0x409/serialnumber
mkdir configs/c.1
echo 896 > configs/c.1/MaxPower
mkdir functions/ffs.usb0
ln -s functions/ffs.usb0 configs/c.1/ || fail "link function"
cd /
mount -t functionfs usb0 /ffs || fail "mount functionfs"
/bin/usb-gadget /ffs /run/gadget-ready$gargs > /dev/console 2>&1 &
gadget_pid=\$!
n=0
while [ ! -e /run/gadget-ready ]; do
  kill -0 \$gadget_pid 2>/dev/null || fail "gadget program exited before it was ready"
  n=\$((n+1)); [ \$n -gt 300 ] && fail "gadget program not ready after 30 s"
  usleep 100000
done
echo dummy_udc.0 > \$G/UDC || fail "bind dummy_udc.0"
n=0
until grep -qix "$(printf '%04x' "$vid")" /sys/bus/usb/devices/*/idVendor 2>/dev/null; do
  n=\$((n+1)); [ \$n -gt 300 ] && fail "device $vid:$pid did not enumerate"
  usleep 100000
done
echo "run-guest: device enumerated, starting host program"
/bin/usb-host$qargs
rc=\$?
# Unbind so the gadget program sees UNBIND and prints what it served, then finish.
echo "" > \$G/UDC
n=0
while kill -0 \$gadget_pid 2>/dev/null && [ \$n -lt 50 ]; do n=\$((n+1)); usleep 100000; done
[ \$rc -eq 0 ] && result PASS
fail "host program exit status \$rc"
INIT
chmod +x "$root/init"

(cd "$root" && find . | "$busybox" cpio -o -H newc 2>/dev/null | gzip -1) > "$work/initrd.gz"

# ---- 3. boot ------------------------------------------------------------------------------------
log="$work/console.log"
set +e
timeout --foreground -k 5 "$timeout_s" qemu-system-x86_64 -accel tcg -cpu max -smp "$smp" -m "$mem" \
  -kernel "$kdir/vmlinuz" -initrd "$work/initrd.gz" \
  -append "console=ttyS0 quiet panic=-1 rdinit=/init" \
  -display none -monitor none -serial stdio -no-reboot -nic none < /dev/null 2>&1 | tee "$log"
qrc=${PIPESTATUS[0]}
set -e
line=$(grep -a 'USB-QEMU-RESULT:' "$log" | tail -n1 | tr -d '\r')
case "$line" in
  "USB-QEMU-RESULT: PASS") exit 0 ;;
  "USB-QEMU-RESULT: "*) exit 1 ;;
  *) echo "run-guest: no result line from the guest (qemu exit status $qrc; timeout ${timeout_s}s)" >&2; exit 1 ;;
esac
