#!/usr/bin/env bash
# libreel.so exports its public API and nothing else: every dynamic symbol
# it defines starts with reel_ (the linker's own _init/_fini/_edata/_end/
# __bss_start aside, and AddressSanitizer's __odr_asan.reel_* markers of
# exported globals in a sanitizer build), and the symbols of the layers' internals (a JSON
# writer, the IR, the scheduler) are not among them.
# Usage: test_exports.sh LIBREEL_SO
set -u
lib=$1
. "$(dirname "$0")/../support/lib.sh"
syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
count=$(wc -l <<<"$syms")
others=$(grep -vE '^(reel_|__odr_asan\.reel_|_init$|_fini$|_edata$|_end$|__bss_start$)' <<<"$syms")
[ -z "$others" ] && ok || bad "exported without the reel_ prefix:"$'\n'"$others"
for internal in reel_json_string reel_ir_graph_new reel_sched_notify reel_blas_setup vk_exec_new; do
  grep -qx "$internal" <<<"$syms" && bad "internal symbol $internal is exported" || ok
done
for public in reel_init reel_parse_launch reel_session_run reel_tensor_new reel_element_class_register; do
  grep -qx "$public" <<<"$syms" && ok || bad "public symbol $public is not exported"
done
echo "$count symbols exported"
finish
