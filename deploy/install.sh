#!/usr/bin/env bash
# Installs Fleetwatch as three systemd services: fleetwatch (assistant and approval page, user
# fleetwatch) and fleetwatch-executor (the only writer, user fleetwatch-exec), joined by a Unix
# socket whose group is fleetwatch-sock, and fleetwatch-confirm (the confirm page, a dynamic
# user with no network but the loopback sockets of fleetwatch-confirm.socket, which the script
# enables).
#
# Safe to re-run: binaries, units, tmpfiles rules and the policy are replaced only when they
# differ; configuration files, keys and state folders that already exist are never overwritten
# or deleted. The assistant's public key line is added to the approver file only when missing.
#
#   deploy/install.sh [--bin-dir DIR] [--policy FILE] [--second-person yes|no] [--root DIR]
#                     [--dry-run]
#   deploy/install.sh --uninstall      prints what to remove by hand; removes nothing
#
# --second-person says whether a disruptive change needs a second operator's passkey (the
# executor's passkeys.quorum_disruptive: 2). Without it the script asks when it runs on a
# terminal and answers "no" otherwise; it applies only when executor.yaml is written.
#
# --root DIR installs into a throwaway folder instead of the system: every path is prefixed
# with DIR, users and groups are written to DIR/etc/passwd and DIR/etc/group, ownership is
# printed instead of applied, and systemctl is never called. It is for tests and packaging.
set -euo pipefail

# Nothing this script creates should be readable by others before its mode is set.
umask 077

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$SCRIPT_DIR")
BIN_DIR="$REPO_DIR/target/deploy"
POLICY_SRC="$REPO_DIR/tool_policy.yaml"
ROOT=""
DRY_RUN=0
ACTION=install
CHANGES=0
SECOND_PERSON=""

ASSISTANT_USER=fleetwatch
EXECUTOR_USER=fleetwatch-exec
SOCKET_GROUP=fleetwatch-sock

usage() {
    cat <<'EOF'
Usage: install.sh [--bin-dir DIR] [--policy FILE] [--second-person yes|no] [--root DIR]
                  [--dry-run]
       install.sh --uninstall [--root DIR]

  --bin-dir DIR   folder holding the built fleetwatch and fleetwatch-executor
                  (default: target/deploy next to this script's folder)
  --policy FILE   tool policy to install (default: tool_policy.yaml in the repository)
  --second-person yes|no
                  whether a disruptive change needs a second operator's passkey (written
                  into a new executor.yaml; default: asked on a terminal, otherwise no)
  --root DIR      install into DIR instead of / (throwaway root: no users created on the
                  system, no chown, no systemctl)
  --dry-run       print what would be done and change nothing
  --uninstall     print what to remove by hand; never deletes anything
  -h, --help      this text
EOF
}

die() {
    printf 'install.sh: %s\n' "$*" >&2
    exit 1
}

say() {
    printf '%s\n' "$*"
}

# Counts a change and says what it is (or would be, in a dry run).
changed() {
    CHANGES=$((CHANGES + 1))
    if [[ $DRY_RUN -eq 1 ]]; then
        say "would: $*"
    else
        say "changed: $*"
    fi
}

# Runs a command unless this is a dry run.
run() {
    if [[ $DRY_RUN -eq 0 ]]; then
        "$@"
    fi
}

# Creates a folder and any missing parents as 0755: the script's own umask would make the
# parents 0700 and lock the service users out of paths such as /usr/local/share.
make_dir() {
    (umask 022 && mkdir -p -- "$1")
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --bin-dir) [[ $# -ge 2 ]] || die "--bin-dir needs a folder"; BIN_DIR=$2; shift 2 ;;
        --bin-dir=*) BIN_DIR=${1#*=}; shift ;;
        --policy) [[ $# -ge 2 ]] || die "--policy needs a file"; POLICY_SRC=$2; shift 2 ;;
        --policy=*) POLICY_SRC=${1#*=}; shift ;;
        --second-person) [[ $# -ge 2 ]] || die "--second-person needs yes or no"; SECOND_PERSON=$2; shift 2 ;;
        --second-person=*) SECOND_PERSON=${1#*=}; shift ;;
        --root) [[ $# -ge 2 ]] || die "--root needs a folder"; ROOT=$2; shift 2 ;;
        --root=*) ROOT=${1#*=}; shift ;;
        --dry-run) DRY_RUN=1; shift ;;
        --uninstall) ACTION=uninstall; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

case $SECOND_PERSON in
    "" | yes | no) ;;
    *) die "--second-person takes yes or no, not '$SECOND_PERSON'" ;;
esac

if [[ -n $ROOT ]]; then
    if [[ ! -d $ROOT ]]; then
        [[ $DRY_RUN -eq 1 ]] || make_dir "$ROOT"
    fi
    if [[ -d $ROOT ]]; then
        ROOT=$(cd "$ROOT" && pwd)
    fi
    # A root of / would silently become a real install with fake users and no ownership.
    [[ $ROOT != "/" ]] || die "--root / is the real system; leave --root out instead"
fi

# Paths on the target system.
P_BIN="$ROOT/usr/local/bin"
P_ETC="$ROOT/etc/fleetwatch"
P_UNITS="$ROOT/etc/systemd/system"
P_TMPFILES="$ROOT/etc/tmpfiles.d"
P_DOC="$ROOT/usr/local/share/doc/fleetwatch"
P_STATE="$ROOT/var/lib/fleetwatch"
P_EXEC_STATE="$ROOT/var/lib/fleetwatch-executor"

uninstall_notes() {
    cat <<EOF
Fleetwatch removes nothing by itself. To take it off this machine, as root:

  systemctl disable --now fleetwatch.service fleetwatch-executor.service \
    fleetwatch-confirm.socket fleetwatch-confirm.service
  rm -f $P_UNITS/fleetwatch.service $P_UNITS/fleetwatch-executor.service \
    $P_UNITS/fleetwatch-confirm.socket $P_UNITS/fleetwatch-confirm.service
  rm -f $P_TMPFILES/fleetwatch.conf
  rm -f $P_BIN/fleetwatch $P_BIN/fleetwatch-executor $P_BIN/fleetwatch-confirm
  rm -rf $P_DOC
  systemctl daemon-reload

Kept on purpose; remove only once you no longer need them:
  $P_EXEC_STATE   the executor's audit chain (keep it as a record of every change made)
                  and the sandbox sign-in (run \`fleetwatch-executor logout --sandbox\` first)
  $P_STATE        the assistant's history, normal sign-in and approval-signing key
  $P_ETC          policy, executor.yaml, approvers.pub, fleetwatch.env, fleetwatch-executor.env, anthropic-api-key
  users $ASSISTANT_USER and $EXECUTOR_USER, group $SOCKET_GROUP
                  (userdel $ASSISTANT_USER; userdel $EXECUTOR_USER; groupdel $SOCKET_GROUP)
EOF
}

if [[ $ACTION == uninstall ]]; then
    uninstall_notes
    exit 0
fi

if [[ -z $ROOT && $DRY_RUN -eq 0 && $EUID -ne 0 ]]; then
    die "run as root (or use --dry-run, or --root DIR for a throwaway root)"
fi

for bin in fleetwatch fleetwatch-executor fleetwatch-confirm; do
    [[ -f $BIN_DIR/$bin && -x $BIN_DIR/$bin ]] ||
        die "$BIN_DIR/$bin is missing; build it (cargo build --profile deploy -p fleetwatch-executor, then the same with -p fleetwatch-confirm and with -p fleetwatch: apart, so each keeps its own features) or pass --bin-dir"
done
[[ -f $POLICY_SRC ]] || die "$POLICY_SRC is missing; pass --policy"
for f in fleetwatch.service fleetwatch-executor.service fleetwatch-confirm.socket \
    fleetwatch-confirm.service fleetwatch.tmpfiles executor.yaml.example fleetwatch.env.example \
    fleetwatch-executor.env.example; do
    [[ -f $SCRIPT_DIR/$f ]] || die "$SCRIPT_DIR/$f is missing; run this script from a complete checkout"
done

# ---- users and groups ------------------------------------------------------------------------

nologin_shell() {
    local shell
    for shell in /usr/sbin/nologin /sbin/nologin /bin/false; do
        if [[ -x $shell ]]; then
            printf '%s\n' "$shell"
            return
        fi
    done
    printf '/bin/false\n'
}

# In a throwaway root, users live only in ROOT/etc/passwd and ROOT/etc/group, with ids taken
# downwards from 999 so they look like system accounts and never collide with each other.
stub_free_id() {
    local id=999
    while awk -F: -v id="$id" '$3 == id { found = 1 } END { exit !found }' \
        "$ROOT/etc/passwd" "$ROOT/etc/group"; do
        id=$((id - 1))
    done
    printf '%s\n' "$id"
}

stub_files() {
    if [[ $DRY_RUN -eq 0 ]]; then
        make_dir "$ROOT/etc"
        [[ -e $ROOT/etc/passwd ]] || install -m 0644 /dev/null "$ROOT/etc/passwd"
        [[ -e $ROOT/etc/group ]] || install -m 0644 /dev/null "$ROOT/etc/group"
    fi
}

has_group() {
    if [[ -n $ROOT ]]; then
        [[ -f $ROOT/etc/group ]] && awk -F: -v n="$1" '$1 == n { found = 1 } END { exit !found }' "$ROOT/etc/group"
    else
        getent group "$1" >/dev/null
    fi
}

has_user() {
    if [[ -n $ROOT ]]; then
        [[ -f $ROOT/etc/passwd ]] && awk -F: -v n="$1" '$1 == n { found = 1 } END { exit !found }' "$ROOT/etc/passwd"
    else
        getent passwd "$1" >/dev/null
    fi
}

user_id() {
    if [[ -n $ROOT ]]; then
        awk -F: -v n="$1" '$1 == n { print $3 }' "$ROOT/etc/passwd"
    else
        id -u "$1"
    fi
}

in_group() {
    local user=$1 group=$2
    if [[ -n $ROOT ]]; then
        awk -F: -v g="$group" -v u="$user" '
            $1 == g { n = split($4, m, ","); for (i = 1; i <= n; i++) if (m[i] == u) found = 1 }
            END { exit !found }' "$ROOT/etc/group"
    else
        id -nG "$user" | tr ' ' '\n' | grep -qxF "$group"
    fi
}

ensure_group() {
    local name=$1
    has_group "$name" && return
    changed "create system group $name"
    if [[ -n $ROOT ]]; then
        if [[ $DRY_RUN -eq 0 ]]; then
            printf '%s:x:%s:\n' "$name" "$(stub_free_id)" >>"$ROOT/etc/group"
        fi
    else
        run groupadd --system "$name"
    fi
}

ensure_user() {
    local name=$1 id
    has_user "$name" && return
    changed "create system user $name (own group, no home, no login shell)"
    if [[ -n $ROOT ]]; then
        if [[ $DRY_RUN -eq 0 ]]; then
            id=$(stub_free_id)
            printf '%s:x:%s:\n' "$name" "$id" >>"$ROOT/etc/group"
            printf '%s:x:%s:%s::/nonexistent:%s\n' "$name" "$id" "$id" "$(nologin_shell)" >>"$ROOT/etc/passwd"
        fi
    else
        run useradd --system --user-group --no-create-home --home-dir /nonexistent \
            --shell "$(nologin_shell)" "$name"
    fi
}

ensure_member() {
    local user=$1 group=$2 tmp
    if [[ $DRY_RUN -eq 1 ]] && ! has_user "$user"; then
        changed "add $user to group $group"
        return
    fi
    in_group "$user" "$group" && return
    changed "add $user to group $group"
    if [[ -n $ROOT ]]; then
        if [[ $DRY_RUN -eq 0 ]]; then
            tmp=$(mktemp "$ROOT/etc/.group.XXXXXX")
            awk -F: -v OFS=: -v g="$group" -v u="$user" '
                $1 == g { $4 = ($4 == "" ? u : $4 "," u) } { print }' "$ROOT/etc/group" >"$tmp"
            chmod 0644 "$tmp"
            mv -f -- "$tmp" "$ROOT/etc/group"
        fi
    else
        run usermod --append --groups "$group" "$user"
    fi
}

# ---- files -----------------------------------------------------------------------------------

# Applies owner:group, or in a throwaway root says which owner the real install would set
# (naming `shown`, the final path, when `path` is a temporary file).
set_owner() {
    local owner=$1 path=$2 shown=${3:-$2}
    if [[ -n $ROOT ]]; then
        say "  owner on a real system: $owner ${shown#"$ROOT"}"
    else
        run chown -- "$owner" "$path"
    fi
}

owner_differs() {
    local owner=$1 path=$2
    [[ -z $ROOT && -e $path && $(stat -c '%U:%G' -- "$path") != "$owner" ]]
}

mode_of() {
    stat -c '%a' -- "$1"
}

# A folder this script owns the layout of: created, and its mode and owner kept as given.
ensure_dir() {
    local path=$1 mode=$2 owner=$3
    if [[ ! -d $path ]]; then
        changed "create folder $path ($mode $owner)"
        run make_dir "$path"
        run chmod "$mode" "$path"
        set_owner "$owner" "$path"
        return
    fi
    if [[ $(mode_of "$path") != "${mode#0}" ]]; then
        changed "chmod $mode $path"
        run chmod "$mode" "$path"
    fi
    if owner_differs "$owner" "$path"; then
        changed "chown $owner $path"
        set_owner "$owner" "$path"
    fi
}

# A state folder: created when missing, otherwise left exactly as it is.
ensure_state_dir() {
    local path=$1 owner=$2
    if [[ -d $path ]]; then
        say "kept: $path (existing state is never touched)"
        return
    fi
    changed "create state folder $path (0700 $owner)"
    run make_dir "$path"
    run chmod 0700 "$path"
    set_owner "$owner" "$path"
}

# Installs src at dest with mode and owner through a temporary file and a rename, so a running
# service never sees half a file. Replaces dest only when the content differs; with `keep`
# the replaced file is saved as dest.previous.
install_file() {
    local src=$1 dest=$2 mode=$3 owner=$4 keep=${5:-} tmp
    if [[ -f $dest ]] && cmp -s -- "$src" "$dest"; then
        if [[ $(mode_of "$dest") != "${mode#0}" ]]; then
            changed "chmod $mode $dest"
            run chmod "$mode" "$dest"
        fi
        if owner_differs "$owner" "$dest"; then
            changed "chown $owner $dest"
            set_owner "$owner" "$dest"
        fi
        return
    fi
    if [[ -e $dest ]]; then
        changed "replace $dest ($mode $owner)"
        if [[ $keep == keep ]]; then
            say "  the old file is kept as $dest.previous"
            run cp -p -- "$dest" "$dest.previous"
        fi
    else
        changed "install $dest ($mode $owner)"
    fi
    [[ $DRY_RUN -eq 0 ]] || return 0
    tmp=$(mktemp "$(dirname "$dest")/.install.XXXXXX")
    cat -- "$src" >"$tmp"
    chmod "$mode" "$tmp"
    set_owner "$owner" "$tmp" "$dest"
    mv -f -- "$tmp" "$dest"
}

# Installs src at dest only when dest does not exist: configuration and secrets the operator
# owns from then on.
install_if_absent() {
    local src=$1 dest=$2 mode=$3 owner=$4
    if [[ -e $dest ]]; then
        say "kept: $dest (existing configuration is never overwritten)"
        return
    fi
    install_file "$src" "$dest" "$mode" "$owner"
}

# ---- the steps -------------------------------------------------------------------------------

say "Installing Fleetwatch${ROOT:+ into the throwaway root $ROOT}"
[[ $DRY_RUN -eq 0 ]] || say "(dry run: nothing is changed)"

WORK=$(mktemp -d)
trap 'rm -rf -- "$WORK"' EXIT

if [[ -n $ROOT ]]; then
    say "throwaway root: users and groups go to $ROOT/etc/passwd and $ROOT/etc/group"
    stub_files
fi
ensure_group "$SOCKET_GROUP"
ensure_user "$ASSISTANT_USER"
ensure_user "$EXECUTOR_USER"
# The executor's socket is group fleetwatch-sock; the assistant joins it to connect, and the
# executor runs with it as its primary group (Group= in its unit) so the socket gets it.
ensure_member "$ASSISTANT_USER" "$SOCKET_GROUP"
ensure_member "$EXECUTOR_USER" "$SOCKET_GROUP"

# /usr/local/bin may not exist in a throwaway root; on a real system it is root's already.
for dir in "$P_BIN" "$P_UNITS" "$P_TMPFILES" "$ROOT/var/lib" "$P_DOC"; do
    if [[ ! -d $dir ]]; then
        changed "create folder $dir"
        run make_dir "$dir"
        run chmod 0755 "$dir"
    fi
done
ensure_dir "$P_ETC" 0755 root:root

install_file "$BIN_DIR/fleetwatch" "$P_BIN/fleetwatch" 0755 root:root
install_file "$BIN_DIR/fleetwatch-executor" "$P_BIN/fleetwatch-executor" 0755 root:root
install_file "$BIN_DIR/fleetwatch-confirm" "$P_BIN/fleetwatch-confirm" 0755 root:root
install_file "$SCRIPT_DIR/fleetwatch.service" "$P_UNITS/fleetwatch.service" 0644 root:root
install_file "$SCRIPT_DIR/fleetwatch-executor.service" "$P_UNITS/fleetwatch-executor.service" 0644 root:root
install_file "$SCRIPT_DIR/fleetwatch.tmpfiles" "$P_TMPFILES/fleetwatch.conf" 0644 root:root
if [[ -f $REPO_DIR/README.md ]]; then
    install_file "$REPO_DIR/README.md" "$P_DOC/README.md" 0644 root:root
fi

# The policy decides what may be read and proposed, so neither service user may change it:
# root-owned, 0644, in a root-owned 0755 folder. A newer policy ships with newer binaries.
install_file "$POLICY_SRC" "$P_ETC/tool_policy.yaml" 0644 root:root keep

install_if_absent "$SCRIPT_DIR/fleetwatch.env.example" "$P_ETC/fleetwatch.env" 0644 root:root
install_if_absent "$SCRIPT_DIR/fleetwatch-executor.env.example" "$P_ETC/fleetwatch-executor.env" \
    0644 root:root

# The last value of NAME in fleetwatch.env when it matches the pattern, else nothing.
env_value() {
    [[ -f $P_ETC/fleetwatch.env ]] || return 0
    sed -n "s|^$1=\\($2\\)[[:space:]]*\$|\\1|p" "$P_ETC/fleetwatch.env" | tail -n 1
}

# The confirm page's origin and the approval page's port, from the site settings or their
# defaults: the confirm units and a new executor.yaml's passkey origin are written with them.
confirm_origin=$(env_value FLEETWATCH_CONFIRM_ORIGIN 'http://localhost:[1-9][0-9]\{0,4\}')
confirm_origin=${confirm_origin:-http://localhost:8768}
approve_port=$(env_value FLEETWATCH_APPROVE_PORT '[1-9][0-9]\{0,4\}')
approve_port=${approve_port:-8767}
for port in "${confirm_origin##*:}" "$approve_port"; do
    ((port <= 65535)) || die "port $port in $P_ETC/fleetwatch.env is not a port number"
done
# Both loopback addresses, but ::1 only where this host has it: a socket unit that cannot bind
# one of its addresses does not start at all.
sed -e "s|^ListenStream=127\.0\.0\.1:8768\$|ListenStream=127.0.0.1:${confirm_origin##*:}|" \
    -e "s|^ListenStream=\[::1\]:8768\$|ListenStream=[::1]:${confirm_origin##*:}|" \
    "$SCRIPT_DIR/fleetwatch-confirm.socket" >"$WORK/fleetwatch-confirm.socket"
if ! grep -qs '^0\{31\}1 ' /proc/net/if_inet6; then
    say "this host has no IPv6 loopback: the confirm page listens on 127.0.0.1 only"
    sed -i '/^ListenStream=\[::1\]/d' "$WORK/fleetwatch-confirm.socket"
fi
grep -q "^ListenStream=127.0.0.1:${confirm_origin##*:}\$" "$WORK/fleetwatch-confirm.socket" ||
    die "fleetwatch-confirm.socket has no ListenStream=127.0.0.1:8768 line to fill in"
sed -e "s|--page-origin http://localhost:8767 |--page-origin http://localhost:$approve_port |" \
    "$SCRIPT_DIR/fleetwatch-confirm.service" >"$WORK/fleetwatch-confirm.service"
grep -q -- "--page-origin http://localhost:$approve_port " "$WORK/fleetwatch-confirm.service" ||
    die "fleetwatch-confirm.service has no --page-origin to fill in"
CONFIRM_BEFORE=$CHANGES
install_file "$WORK/fleetwatch-confirm.socket" "$P_UNITS/fleetwatch-confirm.socket" 0644 root:root
install_file "$WORK/fleetwatch-confirm.service" "$P_UNITS/fleetwatch-confirm.service" 0644 root:root
CONFIRM_CHANGED=$((CHANGES - CONFIRM_BEFORE))
# An empty key file means "no model": keyword answers only and nothing sent to Anthropic.
install_if_absent /dev/null "$P_ETC/anthropic-api-key" 0600 root:root

# The executor serves only the assistant's uid, so the example's placeholder is replaced by it.
if [[ -e $P_ETC/executor.yaml ]]; then
    say "kept: $P_ETC/executor.yaml (existing configuration is never overwritten)"
    # An upgraded configuration may still trust another origin (the approval page's, from before
    # the confirm page): passkeys must come from the confirm page only. Say the one line.
    kept_origins=$(grep -E '^  origins:' "$P_ETC/executor.yaml" || true)
    if [[ -n $kept_origins && $kept_origins != "  origins: [\"$confirm_origin\"]" ]]; then
        die "$P_ETC/executor.yaml has '$kept_origins'; passkeys are taken from the confirm page only: change that line to '  origins: [\"$confirm_origin\"]' and run install.sh again"
    fi
    if [[ -n $SECOND_PERSON ]]; then
        say "  --second-person applies to a new executor.yaml only: set passkeys.quorum_disruptive in it by hand"
    fi
elif has_user "$ASSISTANT_USER"; then
    # A second person for disruptive changes: asked on a terminal, "no" otherwise.
    if [[ -z $SECOND_PERSON ]]; then
        SECOND_PERSON=no
        if [[ -t 0 && $DRY_RUN -eq 0 ]]; then
            read -r -p "Require a second operator's passkey for disruptive changes (reboot, firmware, stopping a recording)? [y/N] " answer || answer=""
            [[ $answer =~ ^[Yy] ]] && SECOND_PERSON=yes
        fi
    fi
    # The example's commented line, switched on when a second person is wanted.
    quorum_line="^  # quorum_disruptive: 2 "
    quorum_sed="s|^  # quorum_disruptive: 2 |&|"
    if [[ $SECOND_PERSON == yes ]]; then
        quorum_line="^  quorum_disruptive: 2 "
        quorum_sed="s|^  # quorum_disruptive: 2 .*|  quorum_disruptive: 2   # a second person for every disruptive change (install.sh)|"
    fi
    uid=$(user_id "$ASSISTANT_USER")
    [[ $uid =~ ^[0-9]+$ ]] || die "cannot find the uid of $ASSISTANT_USER"
    # Passkeys are accepted only from the confirm page's origin (fleetwatch-confirm serve),
    # never from the assistant's own page.
    sed -e "s/^allowed_uids: .*/allowed_uids: [$uid]   # $ASSISTANT_USER/" \
        -e "s|^  origins: .*|  origins: [\"$confirm_origin\"]|" \
        -e "$quorum_sed" \
        "$SCRIPT_DIR/executor.yaml.example" >"$WORK/executor.yaml"
    grep -q "^allowed_uids: \[$uid\]" "$WORK/executor.yaml" ||
        die "executor.yaml.example has no allowed_uids line to fill in"
    grep -q "^  origins: \[\"$confirm_origin\"\]" "$WORK/executor.yaml" ||
        die "executor.yaml.example has no passkey origins line to fill in"
    grep -q "$quorum_line" "$WORK/executor.yaml" ||
        die "executor.yaml.example has no quorum_disruptive line to fill in"
    install_file "$WORK/executor.yaml" "$P_ETC/executor.yaml" 0640 "root:$EXECUTOR_USER"
    if [[ $SECOND_PERSON == yes ]]; then
        say "  a disruptive change needs two operators' passkeys (passkeys.quorum_disruptive: 2)"
    else
        say "  one operator's passkey approves any change once enrolled (--second-person yes for two)"
    fi
else
    changed "install $P_ETC/executor.yaml (0640 root:$EXECUTOR_USER) with allowed_uids: [uid of $ASSISTANT_USER]"
fi

ensure_state_dir "$P_STATE" "$ASSISTANT_USER:$ASSISTANT_USER"
ensure_state_dir "$P_EXEC_STATE" "$EXECUTOR_USER:$SOCKET_GROUP"

# The assistant's approval-signing key is made by the assistant itself, as its own user, in its
# state folder (`keys show` creates it on first use). Only the public line comes back here.
KEYS="$P_ETC/approvers.pub"
if [[ $DRY_RUN -eq 1 ]]; then
    say "would: run \`fleetwatch keys show\` as $ASSISTANT_USER and add its line to $KEYS if missing"
else
    key_env=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "FLEETWATCH_STATE_DIR=$P_STATE"
        "FLEETWATCH_POLICY=$P_ETC/tool_policy.yaml")
    if [[ -n $ROOT ]]; then
        say "throwaway root: running $P_BIN/fleetwatch keys show as the current user"
        shown=$(cd / && "${key_env[@]}" "$P_BIN/fleetwatch" keys show) ||
            die "\`fleetwatch keys show\` failed"
    else
        shown=$(cd / && runuser -u "$ASSISTANT_USER" -- "${key_env[@]}" "$P_BIN/fleetwatch" keys show) ||
            die "\`fleetwatch keys show\` failed as $ASSISTANT_USER; fix what it said and re-run"
    fi
    line=$(printf '%s\n' "$shown" | grep -m1 -E '^ed25519 [A-Za-z0-9+/]+=*( |$)' || true)
    [[ -n $line ]] || die "\`fleetwatch keys show\` printed no \`ed25519 <base64>\` line"
    key=$(printf '%s\n' "$line" | awk '{ print $1 " " $2 }')
    if [[ -f $KEYS ]] && awk -v k="$key" '($1 " " $2) == k { found = 1 } END { exit !found }' "$KEYS"; then
        say "kept: $KEYS already lists the assistant's key"
    elif [[ -f $KEYS ]]; then
        changed "add the assistant's key line to $KEYS (other lines kept)"
        # Appending keeps the file's owner and mode; a missing final newline would glue lines.
        if [[ -s $KEYS && $(tail -c 1 -- "$KEYS" | wc -l) -eq 0 ]]; then
            printf '\n' >>"$KEYS"
        fi
        printf '%s\n' "$line" >>"$KEYS"
    else
        printf '%s\n' "$line" >"$WORK/approvers.pub"
        install_file "$WORK/approvers.pub" "$KEYS" 0640 "root:$EXECUTOR_USER"
    fi
fi

if [[ -n $ROOT ]]; then
    say "throwaway root: systemctl and systemd-tmpfiles not called"
elif [[ $DRY_RUN -eq 1 ]]; then
    say "would: systemd-tmpfiles --create fleetwatch.conf; systemctl daemon-reload; systemctl enable --now fleetwatch-confirm.socket"
elif [[ -d /run/systemd/system ]]; then
    systemd-tmpfiles --create /etc/tmpfiles.d/fleetwatch.conf
    systemctl daemon-reload
    # The confirm page needs no configuration of its own, so it is on from the start; changed
    # units take effect now (a running page is restarted on its next connection).
    systemctl enable --now fleetwatch-confirm.socket
    if [[ $CONFIRM_CHANGED -gt 0 ]]; then
        # The port is free between the socket's stop and start: never while the assistant runs.
        assistant_was_running=0
        if systemctl is-active --quiet fleetwatch.service; then
            assistant_was_running=1
            systemctl stop fleetwatch.service
        fi
        systemctl stop fleetwatch-confirm.service
        systemctl restart fleetwatch-confirm.socket
        if [[ $assistant_was_running -eq 1 ]]; then
            systemctl start fleetwatch.service
        fi
    fi
else
    say "systemd is not running here: run \`systemd-tmpfiles --create fleetwatch.conf\`, \`systemctl daemon-reload\` and \`systemctl enable --now fleetwatch-confirm.socket\` on the target"
fi

say "$CHANGES change(s)"
if [[ -z $ROOT && $DRY_RUN -eq 0 ]]; then
    cat <<'EOF'

Next:
  1. Set the write fence in /etc/fleetwatch/executor.yaml and /etc/fleetwatch/fleetwatch.env.
  2. Optional: put the Anthropic key in /etc/fleetwatch/anthropic-api-key (empty = no model).
  3. Sign in: the normal sign-in for the assistant (as fleetwatch), then hand the executor the
     devices that sign-in knows and sign the executor in to the sandbox team:
       runuser -u fleetwatch -- fleetwatch login
       runuser -u fleetwatch -- fleetwatch export-devices
       install -o fleetwatch-exec -m 0600 /var/lib/fleetwatch/known-devices.json \
         /var/lib/fleetwatch-executor/known-devices.json
       runuser -u fleetwatch-exec -- fleetwatch-executor login --sandbox \
         --known-devices /var/lib/fleetwatch-executor/known-devices.json
  4. systemctl enable --now fleetwatch-executor.service fleetwatch.service
     (the confirm page, fleetwatch-confirm.socket, is on already: it starts on its first visit)
  5. runuser -u fleetwatch-exec -- fleetwatch-executor doctor
     runuser -u fleetwatch -- fleetwatch doctor
     (both fail "no person is enrolled" until step 6 is done)
  6. Enrol the people who approve: until one is enrolled the executor refuses every change.
     As yourself (not root), in a terminal on the machine whose browser they will use, one
     person at a time; the page's address is printed there only, and the approver line goes
     straight into the executor's file:
       fleetwatch-confirm enrol --person ana --name 'Ana Gómez' \
         | sudo fleetwatch-executor approvers add -
     Compare the fingerprint both commands print. A backup passkey: the same --person and --name.
EOF
fi
