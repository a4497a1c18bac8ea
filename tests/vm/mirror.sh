# shellcheck shell=bash
# Find the Debian mirror this machine's apt is configured with, so the guest
# image comes from the same place as every other package here. Prints the URI.
corral_vm_mirror() {
    local codename=$1 uri
    # deb822 sources first (Debian 12 default), then the one-line format.
    uri=$(awk -v suite="$codename" '
        /^[[:space:]]*$/ { if (t && s && u) { print u; exit } t=s=u=""; next }
        /^Types:/  { for (i = 2; i <= NF; i++) if ($i == "deb") t=1 }
        /^URIs:/   { u=$2 }
        /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) s=1 }
        END { if (t && s && u) print u }' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
    if [ -z "$uri" ] && [ -r /etc/apt/sources.list ]; then
        uri=$(awk -v suite="$codename" '$1 == "deb" && $0 !~ /^#/ {
                i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                if ($(i+1) == suite) { print $i; exit } }' /etc/apt/sources.list)
    fi
    [ -n "$uri" ] || return 1
    printf '%s\n' "$uri"
}
