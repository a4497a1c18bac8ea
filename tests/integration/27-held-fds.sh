#!/bin/bash
# Descriptors held in half-sent requests (corrald(8), LIMITS): two users who send a Run's
# first bytes with three descriptors on 21 connections each keep 16 descriptors each
# (five connections), the rest dropped, and root's Run is still taken; and a request that
# came with descriptors must be complete within 10 s, however often its client sends
# another byte. Before, the two users held 126 of the 128 and root's Run was dropped,
# and trickling connections were kept until the idle timeout.
# timeout: 300
. "$CORRAL_TEST_LIB"
here=$(dirname "$0")
runfds=$here/run-fds.py
sock=/run/corral/io.corral.Manager
systemctl start corrald.socket
corral info >/dev/null

out=$(mktemp -d)
chmod 755 "$out"
python3 "$runfds" "$sock" "$USER_A" "$USER_A" halfsent >"$out/a" 2>&1 &
pa=$!
python3 "$runfds" "$sock" "$USER_B" "$USER_B" halfsent >"$out/b" 2>&1 &
pb=$!
wait_for 60 sh -c "grep -q 'at 5 s' $out/a && grep -q 'at 5 s' $out/b" || fail "the half-sent floods did not start: $(cat "$out"/a "$out"/b)"
log "alice: $(head -1 "$out/a"); bob: $(head -1 "$out/b")"

# Root's Run, while both floods hold what they may (within their 10 s).
r=$(python3 "$runfds" "$sock" root root pipe)
echo "$r"
assert_match "$r" '"job_id"' "root's Run beside two users' half-sent requests"

wait "$pa" "$pb"
log "alice: $(tail -1 "$out/a"); bob: $(tail -1 "$out/b")"
assert_match "$(head -1 "$out/a")" '^dropped 16 of 21' "alice's half-sent requests beyond her 16 descriptors"
assert_match "$(head -1 "$out/b")" '^dropped 16 of 21' "bob's half-sent requests beyond his 16 descriptors"
assert_match "$(tail -1 "$out/a")" '^dropped 21 of 21' "alice's trickling half-sent requests after their 10 s"
assert_match "$(tail -1 "$out/b")" '^dropped 21 of 21' "bob's trickling half-sent requests after their 10 s"
corral info >/dev/null || fail "corrald is not serving after the floods"
rm -rf "$out"
