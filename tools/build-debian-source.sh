#!/bin/sh
# Builds a data plane version from Debian's source package, for the
# end-to-end suite, into $CACHE_DIR/<name>-<version>/ (rebuilt only when
# missing). Usage: tools/build-debian-source.sh nginx|haproxy VERSION SUITE
#
# The source comes from Debian's archive through apt (a deb-src entry for
# SUITE, sources only: no binary package of SUITE is installed), then
# `make -j2`: nginx 1.26 takes 29 s of CPU, HAProxy 3.0 81 s (at -O1).
set -eu
name=$1 version=$2 suite=$3
cache=${CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gwretry}
dest=$cache/$name-$version
case $name in
nginx) bin=$dest/sbin/nginx ;;
haproxy) bin=$dest/sbin/haproxy ;;
*) echo "build-debian-source: unknown data plane $name" >&2; exit 2 ;;
esac
[ -x "$bin" ] && exit 0
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "building $name $version from Debian's $suite source package into $dest (once)"

# Build dependencies from the machine's own release (bookworm).
need=""
for p in build-essential libpcre2-dev libssl-dev zlib1g-dev dpkg-dev; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
list=/etc/apt/sources.list.d/gwretry-$suite-src.sources
if [ ! -f "$list" ]; then
	printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$suite" |
		$SUDO tee "$list" >/dev/null
	updated=""
else
	updated=yes
fi
if [ -n "$need" ] || [ -z "$updated" ] || ! apt-cache showsrc "$name" 2>/dev/null | grep -q "^Version: $version"; then
	$SUDO apt-get update -qq
fi
if [ -n "$need" ]; then
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
full=$(apt-cache showsrc "$name" | awk -v v="$version" '$1 == "Version:" && index($2, v "-") == 1 { print $2; exit }')
if [ -z "$full" ]; then
	echo "build-debian-source: Debian's $suite has no $name $version source package" >&2
	exit 1
fi
# Debian's mirror here serves the upstream tarball of a source package
# but not always its Debian revision (.dsc and debian.tar.xz of a
# +debNNuN update answer 404): unpack the whole source package when it
# came, else the upstream tarball alone (the same upstream release,
# without Debian's patches).
apt-get -o APT::Sandbox::User=root source --download-only -qq "$name=$full" >/dev/null 2>&1 || true
if ls ./*.dsc >/dev/null 2>&1 && dpkg-source -q -x ./*.dsc src >/dev/null 2>&1; then
	echo "unpacked Debian's $name $full source package"
else
	orig=$(ls ./"${name}_$version".orig.tar.* 2>/dev/null | head -1)
	if [ -z "$orig" ]; then
		echo "build-debian-source: could not download $name $full's source from Debian" >&2
		exit 1
	fi
	echo "Debian's revision $full did not download: building the upstream tarball $(basename "$orig") it carries"
	mkdir src && tar -xf "$orig" -C src --strip-components=1
fi
cd src
mkdir -p "$dest.tmp/sbin"
case $name in
nginx)
	./configure --prefix="$dest" --sbin-path="$dest.tmp/sbin/nginx" --with-pcre --with-http_ssl_module \
		--without-http_gzip_module --http-log-path=logs/access.log --error-log-path=stderr >/dev/null
	make -j2 >/dev/null
	cp objs/nginx "$dest.tmp/sbin/nginx"
	;;
haproxy)
	# -O1 without -g: a third less compile time, the same behaviour.
	make -j2 TARGET=linux-glibc USE_OPENSSL=1 USE_PCRE2=1 OPT_CFLAGS=-O1 DEBUG_CFLAGS= >/dev/null
	cp haproxy "$dest.tmp/sbin/haproxy"
	;;
esac
rm -rf "$dest"
mv "$dest.tmp" "$dest"
"$bin" -v 2>&1 | head -1
