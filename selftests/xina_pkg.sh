#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libxina as a developer gets it:
#  - the API is exactly the LIBXINA_API functions of libxina.h, which
#    user/lib/libxina.map lists: libxina.so.0 exports those at LIBXINA_0
#    and nothing else, libxina.a has no other global symbol;
#  - README's example (built by "make selftests" from README.md as C11,
#    C++17 and statically) runs: a C, a C++ and a static worker, and one
#    built with pkg-config from an install, sum through xina-swagg on the
#    loopback device of a namespace of this test's own;
#  - "make install DESTDIR=..." puts libxina.pc, libxina(3) and the man3
#    links in place; pkg-config finds the installed tree through
#    PKG_CONFIG_SYSROOT_DIR, shared and --static; "make uninstall" leaves
#    no file behind.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd nm readelf pkg-config man make gcc g++ ss "$O/xina-swagg" \
	"$O/xinactl" "$O/libxina.so.0" "$O/libxina.a"

MAP=$XINA_ROOT/user/lib/libxina.map
HDR=$XINA_ROOT/user/lib/libxina.h
EX=$O/selftests/readme/sum
PORT=9277
NS=$(unique_name xpkg)
TMP=$(mktemp -d)
ROOTDIR=$TMP/root
PC_PREFIX=/usr/local
swagg_pid=""

cleanup()
{
	[ -n "$swagg_pid" ] && kill "$swagg_pid" 2>/dev/null
	ip netns pids "$NS" 2>/dev/null | xargs -r kill 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

tap_begin 9

map_names()
{
	sed -n 's/^[[:space:]]*\(xina_[a-z0-9_]*\);.*/\1/p' "$MAP" | sort
}

# 1. The map lists what the header declares, no more, no less.
sed -n 's/^LIBXINA_API[^(]*[ *]\(xina_[a-z0-9_]*\)(.*/\1/p' "$HDR" | sort \
	> "$TMP/hdr"
map_names > "$TMP/map"
[ -s "$TMP/map" ]
check_err $? "no names in $MAP"
diff "$TMP/map" "$TMP/hdr" > "$TMP/diff"
check_err $? "map (<) and header (>) differ: $(grep '^[<>]' "$TMP/diff" | tr '\n' ' ')"
log_test "libxina.map lists the $(wc -l < "$TMP/map") LIBXINA_API functions of libxina.h"

# 2. libxina.so.0 exports them at LIBXINA_0 and nothing else.
nm -D --defined-only "$O/libxina.so.0" | awk '$2 != "A" { print $3 }' | sort \
	> "$TMP/so"
sed 's/$/@@LIBXINA_0/' "$TMP/map" > "$TMP/map.ver"
diff "$TMP/map.ver" "$TMP/so" > "$TMP/diff"
check_err $? "expected (<) and exported (>) differ: $(grep '^[<>]' "$TMP/diff" | tr '\n' ' ')"
soname=$(readelf -d "$O/libxina.so.0" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libxina.so.0 ]
check_err $? "SONAME is '$soname'"
log_test "libxina.so.0 exports exactly the map's functions, at LIBXINA_0"

# 3. libxina.a: every global definition is API, internals are local.
nm -g --defined-only "$O/libxina.a" | awk 'NF == 3 { print $3 }' | sort \
	> "$TMP/a"
diff "$TMP/map" "$TMP/a" > "$TMP/diff"
check_err $? "expected (<) and global in libxina.a (>) differ: $(grep '^[<>]' "$TMP/diff" | tr '\n' ' ')"
nm "$O/libxina.a" | grep -q ' t xina_log$'
check_err $? "libxina.a lacks the local xina_log (was the archive localised?)"
log_test "libxina.a defines only the API globally (internals local)"

# 4. make install into a DESTDIR: the pkg-config file and the manuals.
make -C "$XINA_ROOT" --no-print-directory -s O="$O" DESTDIR="$ROOTDIR" \
	PREFIX=$PC_PREFIX install > "$TMP/install.out" 2>&1
check_err $? "make install: $(tail -n3 "$TMP/install.out" | tr '\n' ' ')"
for f in lib/libxina.so.0 lib/libxina.so lib/libxina.a include/libxina.h \
	 include/linux/xina.h lib/pkgconfig/libxina.pc share/man/man3/libxina.3; do
	[ -e "$ROOTDIR$PC_PREFIX/$f" ]
	check_err $? "$PC_PREFIX/$f not installed"
done
while read -r fn; do
	[ "$(cat "$ROOTDIR$PC_PREFIX/share/man/man3/$fn.3" 2>/dev/null)" = ".so man3/libxina.3" ]
	check_err $? "share/man/man3/$fn.3 is no link to libxina.3"
	# every function is in the manual's SYNOPSIS
	man -l "$ROOTDIR$PC_PREFIX/share/man/man3/libxina.3" 2>/dev/null |
		sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' | grep -q "$fn("
	check_err $? "$fn is not in libxina(3)'s SYNOPSIS"
done < "$TMP/map"
warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l \
	"$ROOTDIR$PC_PREFIX/share/man/man3/libxina.3" 2>&1 >/dev/null)
[ -z "$warn" ]
check_err $? "groff warns: $warn"
grep -q ldconfig "$TMP/install.out"
check_fail $? "ldconfig ran for a DESTDIR install"
log_test "make install DESTDIR: libxina.pc, libxina(3), a man3 page per function"

# 5. pkg-config on the installed tree.
pc()
{
	PKG_CONFIG_SYSROOT_DIR=$ROOTDIR \
	PKG_CONFIG_LIBDIR=$ROOTDIR$PC_PREFIX/lib/pkgconfig pkg-config "$@"
}
libs=$(pc --libs libxina)
check_err $? "pkg-config --libs libxina failed"
libs=$(sed "s/ *$//" <<<"$libs")
[ "$libs" = "-L$ROOTDIR$PC_PREFIX/lib -lxina" ]
check_err $? "pkg-config --libs: '$libs'"
slibs=$(pc --libs --static libxina | sed "s/ *$//")
[ "$slibs" = "-L$ROOTDIR$PC_PREFIX/lib -lxina -lxdp -lbpf -lelf -lz -lm -lpthread" ]
check_err $? "pkg-config --libs --static: '$slibs'"
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Wextra -Werror -o "$TMP/sum-pc" "$EX.c" \
	$(pc --cflags --libs libxina) 2> "$TMP/cc.err"
check_err $? "shared build: $(head -n3 "$TMP/cc.err" | tr '\n' ' ')"
# shellcheck disable=SC2046
g++ -std=c++17 -Wall -Wextra -Werror -o "$TMP/sum-pc-cxx" "$EX.cc" \
	$(pc --cflags --libs libxina) 2> "$TMP/cxx.err"
check_err $? "C++ build: $(head -n3 "$TMP/cxx.err" | tr '\n' ' ')"
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Wextra -Werror -static -o "$TMP/sum-pc-static" "$EX.c" \
	$(pc --cflags --libs --static libxina) 2> "$TMP/st.err"
check_err $? "static build: $(head -n3 "$TMP/st.err" | tr '\n' ' ')"
readelf -d "$TMP/sum-pc" 2>/dev/null | grep -q 'NEEDED.*\[libxina.so.0\]'
check_err $? "the shared build does not need libxina.so.0"
nm -D "$TMP/sum-pc" 2>/dev/null | grep -q ' U xina_allreduce_f32@LIBXINA_0$'
check_err $? "the shared build does not bind xina_allreduce_f32@LIBXINA_0"
readelf -d "$TMP/sum-pc-static" 2>/dev/null | grep -q NEEDED
check_fail $? "the static build needs shared libraries"
log_test "pkg-config builds README's example from the installed tree (C, C++, static)"

# 6. README's example: a C, a C++, a static worker and the one built
# from the installed tree add rank + 1 through xina-swagg: 1+2+3+4.
ip netns add "$NS" && ip -n "$NS" link set lo up
check_err $? "netns $NS"
"$O/xinactl" genkey "$TMP/job.key" > /dev/null
check_err $? "xinactl genkey"
ip netns exec "$NS" "$O/xina-swagg" --port $PORT --bind 127.0.0.1 --job 1 \
	--key-file "$TMP/job.key" --workers 4 --slots 128 --elems 256 \
	--member 0=127.0.0.1 --member 1=127.0.0.1 --member 2=127.0.0.1 \
	--member 3=127.0.0.1 > "$TMP/swagg.out" 2>&1 &
swagg_pid=$!
swagg_up()
{
	ip netns exec "$NS" ss -Hlun "sport = :$PORT" | grep -q .
}
busywait 5 swagg_up
check_err $? "xina-swagg did not bind: $(tail -n2 "$TMP/swagg.out")"
# The build tree's (RUNPATH $O), a static one and the installed tree's.
r=0
pids=()
for bin in "$EX-c" "$EX-cxx" "$EX-static" "$TMP/sum-pc"; do
	libpath=""
	[ "$bin" = "$TMP/sum-pc" ] && libpath=$ROOTDIR$PC_PREFIX/lib
	ip netns exec "$NS" env LD_LIBRARY_PATH="$libpath" \
		timeout 30 "$bin" 127.0.0.1 "$TMP/job.key" $r 4 \
		> "$TMP/w$r.out" 2> "$TMP/w$r.err" &
	pids+=($!)
	r=$((r + 1))
done
r=0
for bin in "$EX-c" "$EX-cxx" "$EX-static" "$TMP/sum-pc"; do
	wait "${pids[$r]}"
	check_err $? "worker $r ($(basename "$bin")): $(tr '\n' ' ' < "$TMP/w$r.err")"
	[ "$(cat "$TMP/w$r.out")" = "rank $r: 10" ]
	check_err $? "worker $r ($(basename "$bin")) printed '$(cat "$TMP/w$r.out")', not 'rank $r: 10'"
	r=$((r + 1))
done
log_test "README's example sums 1+2+3+4 = 10 on a C, a C++, a static and a pkg-config worker"
kill "$swagg_pid" 2>/dev/null
wait "$swagg_pid" 2>/dev/null
swagg_pid=""

# 7. A wrong invocation of it fails with the reason.
"$EX-cxx" 127.0.0.1 "$TMP/no-such.key" 0 4 \
	> /dev/null 2> "$TMP/err"
check_fail $? "a missing key file did not fail"
grep -q "^xina_open: No such file or directory$" "$TMP/err"
check_err $? "missing key file: '$(cat "$TMP/err")'"
log_test "README's example reports xina_open's error (a missing key file)"

# 8. The header from C++ without designators (the C++11 form of the
# manual): XINA_OPTS and XINA_STATS zero the struct, padding included.
cat > "$TMP/zero.cc" <<'EOF'
#include <libxina.h>
#include <stdio.h>

static __attribute__((noinline)) void dirty(void)
{
	volatile unsigned char b[8192];

	for (unsigned int i = 0; i < sizeof(b); i++)
		b[i] = 0xa5;
}

/* Zeroes the compiler cannot see: every field stored on its own. */
static volatile unsigned int z;

static __attribute__((noinline)) int zeroed(void)
{
	XINA_OPTS(o, .switch_addr = (const char *)(size_t)z,
		  .switch_port = (uint16_t)z, .bind_port = (uint16_t)z,
		  .bind_addr = (const char *)(size_t)z, .job = z,
		  .rank = (uint16_t)z, .workers = (uint16_t)z,
		  .key_file = (const char *)(size_t)z, .slots = z,
		  .elems = (uint16_t)z, .flags = (uint16_t)z, .timeout_ms = z,
		  .rto_us = z, .rto_max_us = z, .log = (xina_log_fn)(size_t)z,
		  .log_ctx = (void *)(size_t)z,
		  .log_level = (enum xina_log_level)z, .join_timeout_ms = z,
		  .io = (enum xina_io)z);
	XINA_STATS(s);
	const unsigned char *p = (const unsigned char *)&o;
	const unsigned char *q = (const unsigned char *)&s;
	unsigned int i;

	for (i = sizeof(o.sz); i < sizeof(o); i++) {
		if (p[i]) {
			fprintf(stderr, "struct xina_opts: byte %u is 0x%02x\n", i, p[i]);
			return 1;
		}
	}
	for (i = sizeof(s.sz); i < sizeof(s); i++) {
		if (q[i]) {
			fprintf(stderr, "struct xina_worker_stats: byte %u is 0x%02x\n", i, q[i]);
			return 1;
		}
	}
	if (o.sz != sizeof(o) || s.sz != sizeof(s)) {
		fprintf(stderr, "sz %zu, %zu\n", o.sz, s.sz);
		return 1;
	}
	return 0;
}

int main(void)
{
	dirty();
	return zeroed();
}
EOF
for cc in gcc g++ clang clang++; do
	command -v $cc > /dev/null || continue
	for opt in -O0 -O2; do
		case $cc in
		*++) lang=c++; std=-std=c++11 ;;
		*) lang=c; std=-std=c11 ;;
		esac
		$cc -x $lang $std $opt -Wall -Wextra -pedantic -Werror \
			-I"$XINA_ROOT/user/lib" -I"$XINA_ROOT/include/uapi" \
			-o "$TMP/zero" "$TMP/zero.cc" 2> "$TMP/zero.err"
		check_err $? "$cc $std $opt: $(head -n3 "$TMP/zero.err" | tr '\n' ' ')"
		"$TMP/zero" 2> "$TMP/zero.err"
		check_err $? "$cc $std $opt: $(cat "$TMP/zero.err")"
	done
done
log_test "XINA_OPTS and XINA_STATS zero every byte (gcc, g++, clang, clang++; -O0, -O2)"

# 9. make uninstall removes every file make install put there.
make -C "$XINA_ROOT" --no-print-directory -s O="$O" DESTDIR="$ROOTDIR" \
	PREFIX=$PC_PREFIX uninstall > "$TMP/uninstall.out" 2>&1
check_err $? "make uninstall: $(tail -n3 "$TMP/uninstall.out" | tr '\n' ' ')"
left=$(find "$ROOTDIR" ! -type d | sed "s|^$ROOTDIR||")
[ -z "$left" ]
check_err $? "left behind: $(echo "$left" | tr '\n' ' ')"
for d in $PC_PREFIX/include/linux $PC_PREFIX/lib/pkgconfig \
	 $PC_PREFIX/share/man/man3 /etc/xina; do
	[ ! -e "$ROOTDIR$d" ]
	check_err $? "$d left behind, empty"
done
log_test "make uninstall DESTDIR leaves no file behind"

tap_end
