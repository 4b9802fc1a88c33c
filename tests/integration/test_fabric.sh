#!/bin/sh
# test_fabric.sh: the fabric emulator on tests/data/topology/fabric-8h4l4s:
# every host reaches every other from both ports, probes with TTL 1/2/3 get
# time-exceeded from the address plan's leaf port, spine cable end and leaf
# cable end of one consistent path, a downed cable stops carrying probes, a
# lossy one drops them (both ways, one way, in bursts), a delay needs
# sch_netem (skipped without it), a whole spine or leaf fails and comes
# back, and no namespace is left behind: after "down",
# after a failed "up", after a signal in the middle of "up", and after a
# killed "up" followed by "down". Needs root (skips with 77 otherwise).
set -eu
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: no ip"; exit 77; }
: "${C4FABRIC:?}" "${FABRIC_PROBE:?}" "${C4_TEST_DATA:?}"
topo=$C4_TEST_DATA/topology/fabric-8h4l4s.yaml
prefix="c4t$$-"
tmp=$(mktemp -d)
fab() { "$C4FABRIC" -t "$topo" -p "$prefix" "$@"; }
left() { ip netns list | grep -c "^$1" || true; }
cleanup() {
	"$C4FABRIC" -t "$topo" -p "$prefix" down >/dev/null 2>&1 || true
	for p in "${prefix}f-" "${prefix}s-" "${prefix}k-"; do
		"$C4FABRIC" -t "$topo" -p "$p" down >/dev/null 2>&1 || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
# Waits (5 s at most) until a namespace named $1* exists.
wait_ns() {
	i=0
	while [ "$(left "$1")" -eq 0 ] && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}
probe() { h=$1; shift; fab exec "$h" -- "$FABRIC_PROBE" -w 1000 "$@"; }

fab up || fail "up"
[ "$(left "$prefix")" -eq 16 ] || fail "expected 16 namespaces"

# every host reaches every other from both ports: port unreachable from
# the destination NIC itself
for s in 0 1 2 3 4 5 6 7; do
	for d in 0 1 2 3 4 5 6 7; do
		[ "$s" = "$d" ] && continue
		for side in l r; do
			out=$(probe "host$s" -i "nic0-$side" "10.0.$d.1" 50000 64) ||
				fail "host$s/$side -> host$d: $out"
			[ "$out" = "ttl 64 from 10.0.$d.1 type 3 code 3" ] ||
				fail "host$s/$side -> host$d: $out"
		done
	done
done
echo "ok: 112 host pairs and sides reachable"

# hop addresses name the path: leaf port, spine end, leaf end, same spine
whois() { fab whois "$(echo "$1" | awk -v t="$2" '$2 == t { print $4 }')"; }
n=0
for sport in 49152 49153 49154 49155 49156 49157 49158 49159; do
	for side in l r; do
		out=$(probe host0 -i "nic0-$side" 10.0.5.1 "$sport" 1 2 3 4) ||
			fail "probe $sport: $out"
		want=left
		[ "$side" = r ] && want=right
		h1=$(whois "$out" 1)
		h2=$(whois "$out" 2)
		h3=$(whois "$out" 3)
		[ "$h1" = "port host0/nic0/$want" ] || fail "ttl 1: $h1"
		sl=leaf0
		[ "$side" = r ] && sl=leaf1
		case $h2 in "cable $sl-spine"?" spine") ;; *) fail "ttl 2: $h2" ;; esac
		spine=${h2#cable $sl-}
		spine=${spine% spine}
		case $h3 in
		"cable leaf2-$spine leaf" | "cable leaf3-$spine leaf") ;;
		*) fail "ttl 3: $h3 after $h2" ;;
		esac
		echo "$out" | grep -q "^ttl 4 from 10.0.5.1 type 3" ||
			fail "ttl 4: $out"
		n=$((n + 1))
	done
done
echo "ok: $n probes traced leaf port -> spine -> leaf"

# a downed cable carries nothing: take the first probe's uplink down
out=$(probe host0 -i nic0-l 10.0.5.1 49152 2)
cable=$(whois "$out" 2 | awk '{ print $2 }')
fab link down "$cable" || fail "link down"
fab status | grep -q "cables 16, down 1" || fail "status after down"
for sport in $(seq 49152 49183); do
	out=$(probe host0 -i nic0-l 10.0.5.1 "$sport" 2) || fail "$sport: $out"
	[ "$(whois "$out" 2 | awk '{ print $2 }')" != "$cable" ] ||
		fail "$sport still crosses downed $cable"
done
out=$(probe host0 -i nic0-l 10.0.5.1 49152 64) || fail "after down: $out"
fab link up "$cable" || fail "link up"
fab status | grep -q "cables 16, down 0" || fail "status after up"
hit=0
for sport in $(seq 49152 49183); do
	out=$(probe host0 -i nic0-l 10.0.5.1 "$sport" 2) || fail "$sport: $out"
	[ "$(whois "$out" 2 | awk '{ print $2 }')" = "$cable" ] && hit=1
done
[ "$hit" = 1 ] || fail "no probe crosses $cable after link up"
echo "ok: link down $cable avoided by 32 ports, used again after up"

# a cable with 100% loss drops the probes that cross it
out=$(probe host0 -i nic0-l 10.0.5.1 49152 2)
cable=$(whois "$out" 2 | awk '{ print $2 }')
fab link loss "$cable" 100 || fail "link loss"
if probe host0 -i nic0-l 10.0.5.1 49152 2 >/dev/null; then
	fail "probe crossed $cable at 100% loss"
fi
fab link loss "$cable" 0 || fail "link loss 0"
probe host0 -i nic0-l 10.0.5.1 49152 2 >/dev/null || fail "loss 0"
echo "ok: link loss on $cable"

# one direction only: the chain sits on the receiving end of that way
lf=${cable%%-*}
sp=${cable#*-}
fab link loss "$cable" 100 up || fail "link loss up"
n_sp=$(fab exec "$sp" -- nft list tables | grep -c c4f_loss || true)
n_lf=$(fab exec "$lf" -- nft list tables | grep -c c4f_loss || true)
[ "$n_sp" = 1 ] && [ "$n_lf" = 0 ] || fail "loss up: spine $n_sp leaf $n_lf"
if probe host0 -i nic0-l 10.0.5.1 49152 2 >/dev/null; then
	fail "probe crossed $cable upward at 100% up loss"
fi
fab link loss "$cable" 100 down || fail "link loss down"
n_sp=$(fab exec "$sp" -- nft list tables | grep -c c4f_loss || true)
n_lf=$(fab exec "$lf" -- nft list tables | grep -c c4f_loss || true)
[ "$n_sp" = 0 ] && [ "$n_lf" = 1 ] || fail "loss down: spine $n_sp leaf $n_lf"
fab link loss "$cable" 0 || fail "link loss 0"
echo "ok: one-way loss on $cable"

# burst loss: runs of lost probes and runs of answered ones
fab link burst "$cable" 50 4 up || fail "link burst"
# (a stray packet on the cable, an ARP, may shift or split a run)
lost=0
run=0
maxrun=0
for i in $(seq 1 16); do
	if fab exec host0 -- "$FABRIC_PROBE" -w 300 -i nic0-l 10.0.5.1 49152 2 \
		>/dev/null 2>&1; then
		run=0
	else
		lost=$((lost + 1))
		run=$((run + 1))
		[ $run -gt $maxrun ] && maxrun=$run
	fi
done
[ "$lost" -ge 6 ] && [ "$lost" -le 10 ] && [ "$maxrun" -ge 3 ] ||
	fail "burst 50% x4: lost $lost of 16, longest run $maxrun"
fab link loss "$cable" 0 || fail "burst off"
echo "ok: burst loss on $cable ($lost of 16 lost, runs up to $maxrun)"

# delay needs sch_netem; a kernel without it is said so, and skipped
rc=0
fab link delay "$cable" 5 2>"$tmp/err" || rc=$?
if [ "$rc" = 3 ]; then
	grep -q "sch_netem" "$tmp/err" || fail "delay refusal unexplained"
	echo "SKIP: link delay: this kernel has no sch_netem"
elif [ "$rc" = 0 ]; then
	fab exec "$lf" -- tc qdisc show dev "$(fab status |
		awk -v c="$cable" '$2 == c { print $3 }')" | grep -q netem ||
		fail "no netem after delay"
	fab link delay "$cable" 0 || fail "delay off"
	echo "ok: link delay on $cable"
else
	fail "link delay exited $rc"
fi

# a whole spine fails: its 4 cables go down, every host still reaches
# every other, and no probe crosses the spine; then it comes back
fab switch down "$sp" || fail "switch down $sp"
fab status | grep -q "cables 16, down 4" || fail "status after switch down"
for sport in $(seq 49152 49167); do
	out=$(probe host0 -i nic0-l 10.0.5.1 "$sport" 2) || fail "$sport: $out"
	case $(whois "$out" 2) in *"-$sp spine") fail "$sport crosses $sp" ;; esac
done
probe host0 -i nic0-r 10.0.5.1 49152 64 >/dev/null || fail "right after $sp"
fab switch up "$sp" || fail "switch up $sp"
fab status | grep -q "cables 16, down 0" || fail "status after switch up"
# a whole leaf fails: host0's left port goes dark, its right still works
fab switch down leaf0 || fail "switch down leaf0"
fab status | grep -q "cables 16, down 4" || fail "status after leaf0 down"
if probe host0 -i nic0-l 10.0.5.1 49152 64 >/dev/null 2>&1; then
	fail "host0 left port works with leaf0 down"
fi
probe host0 -i nic0-r 10.0.5.1 49152 64 >/dev/null || fail "right, leaf0 down"
fab switch up leaf0 || fail "switch up leaf0"
probe host0 -i nic0-l 10.0.5.1 49152 64 >/dev/null || fail "left after up"
echo "ok: switch down/up of $sp and leaf0"

fab down || fail "down"
[ "$(left "$prefix")" -eq 0 ] || fail "namespaces left after down"
fab down || fail "second down"
echo "ok: down removes every namespace, twice"

# a failing step in the middle of up (tc fails): everything removed
mkdir -p "$tmp/bin"
printf '#!/bin/sh\necho "fake tc failure" >&2\nexit 1\n' >"$tmp/bin/tc"
chmod +x "$tmp/bin/tc"
if PATH="$tmp/bin:$PATH" "$C4FABRIC" -t "$topo" -p "${prefix}f-" up \
	2>"$tmp/err"; then
	fail "up with a failing tc succeeded"
fi
grep -q "fake tc failure" "$tmp/err" || fail "tc's stderr not shown"
[ "$(left "${prefix}f-")" -eq 0 ] || fail "namespaces left after failed up"
echo "ok: failed up cleans up"

# a signal in the middle of up (tc hangs a while): everything removed
printf '#!/bin/sh\nsleep 1\nexec /usr/sbin/tc "$@"\n' >"$tmp/bin/tc"
PATH="$tmp/bin:$PATH" "$C4FABRIC" -t "$topo" -p "${prefix}s-" up \
	2>"$tmp/err" &
pid=$!
wait_ns "${prefix}s-"
kill -TERM $pid
if wait $pid; then fail "interrupted up exited 0"; fi
[ "$(left "${prefix}s-")" -eq 0 ] || fail "namespaces left after SIGTERM"
echo "ok: SIGTERM during up cleans up"

# killed outright: the next down (or up) removes what it left
PATH="$tmp/bin:$PATH" "$C4FABRIC" -t "$topo" -p "${prefix}k-" up \
	2>/dev/null &
pid=$!
wait_ns "${prefix}k-"
kill -KILL $pid
wait $pid || true
"$C4FABRIC" -t "$topo" -p "${prefix}k-" down || fail "down after kill"
[ "$(left "${prefix}k-")" -eq 0 ] || fail "namespaces left after kill+down"
echo "ok: down after a killed up cleans up"
echo "PASS"
