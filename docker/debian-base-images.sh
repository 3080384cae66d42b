#!/bin/sh
# Stand-in base images for docker/Dockerfile and docker/compose.yaml, made from Debian bookworm
# packages, for a machine that cannot pull from Docker Hub (docker/smoke.sh was first run on one).
# With Docker Hub (or a registry mirror) do NOT run this: compose pulls the official images.
#
# They are not the official images. Each imitates only what this project uses of its namesake:
#   debian:bookworm-slim       a `debootstrap --variant=minbase` root, `docker import`ed: the base
#                              of the four below
#   python:3.11-slim-bookworm  Debian's python3 (3.11.2) with a virtualenv at /usr/local, so that
#                              `python`, `pip` and the scripts pip installs are on PATH as there
#   node:20-bookworm           Debian's nodejs and npm (Node 18, not 20) and make: the Dockerfile's
#                              `vendor` stage only runs `npm ci` and copies files
#   postgres:16-bookworm       Debian's PostgreSQL 15 (not 16) and an entrypoint honouring
#                              POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB, PGDATA, PGPORT (a smaller
#                              docker-entrypoint.sh than the official one: no initdb.d scripts)
#   redis:7-bookworm           Debian's redis-server 7.0 run as the redis user, protected mode off
#
#   sh docker/debian-base-images.sh    # as root (debootstrap), with a Docker engine; 2 min here
#
# A tag that already exists is kept (it may be the official image): FORCE=1 replaces it.
# DEBIAN_MIRROR / DEBIAN_SECURITY_MIRROR: the Debian archive to use (default deb.debian.org, as
# /etc/apt/sources.list.d/debian.sources has it on the machine this was written on).
# WORKDIR: where the root and the build contexts are made (removed at the end).
# EXTRA_CA_CERTS: a PEM file of CA certificates to trust besides Debian's (a TLS-intercepting proxy
# between this machine and PyPI or npm): python and node trust it (update-ca-certificates), and
# node:20-bookworm then sets NODE_EXTRA_CA_CERTS. The official images trust no such CA.
set -eu
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
WORKDIR=${WORKDIR:-/var/tmp/swarmscope-debian-base}
FORCE=${FORCE:-0}
EXTRA_CA_CERTS=${EXTRA_CA_CERTS:-}

fail() { printf 'debian-base-images: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "run as root (debootstrap)"
command -v debootstrap >/dev/null || fail "no debootstrap (apt-get install debootstrap)"
[ -z "$EXTRA_CA_CERTS" ] || grep -q 'BEGIN CERTIFICATE' "$EXTRA_CA_CERTS" \
  || fail "EXTRA_CA_CERTS: no PEM certificate in $EXTRA_CA_CERTS"
docker info >/dev/null 2>&1 || fail "no Docker engine answers (docker info)"
# The legacy builder: these Dockerfiles need nothing of BuildKit, and it needs no buildx plugin.
export DOCKER_BUILDKIT=0

keep() {  # keep TAG: true (and says so) when TAG exists and FORCE is not 1
  if [ "$FORCE" != 1 ] && docker image inspect "$1" >/dev/null 2>&1; then
    printf 'keeping %s (it exists; FORCE=1 replaces it)\n' "$1"
    return 0
  fi
  return 1
}

rm -rf "$WORKDIR"
mkdir -p "$WORKDIR"
trap 'rm -rf "$WORKDIR"' EXIT

if ! keep debian:bookworm-slim; then
  root="$WORKDIR/root"
  debootstrap --variant=minbase bookworm "$root" "$MIRROR"
  cat > "$root/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY bookworm-security main
EOF
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' > "$root/etc/apt/apt.conf.d/90no-recommends"
  if [ -n "$EXTRA_CA_CERTS" ]; then  # installed by the first image that installs ca-certificates
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp "$EXTRA_CA_CERTS" "$root/usr/local/share/ca-certificates/extra-ca-certs.crt"
  fi
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" --numeric-owner -c . \
    | docker import --change 'ENV LANG=C.UTF-8' --change 'CMD ["bash"]' - debian:bookworm-slim
  rm -rf "$root"
fi

build() {  # build TAG: the Dockerfile (and files) in $WORKDIR/ctx, with the host's network
  docker build --network host -t "$1" "$WORKDIR/ctx"
  rm -rf "$WORKDIR/ctx"
}
apt_install='apt-get update && apt-get install -y --no-install-recommends'
apt_clean='rm -rf /var/lib/apt/lists/*'

if ! keep python:3.11-slim-bookworm; then
  mkdir -p "$WORKDIR/ctx"
  cat > "$WORKDIR/ctx/Dockerfile" <<EOF
FROM debian:bookworm-slim
RUN $apt_install python3 python3-venv ca-certificates netbase tzdata && $apt_clean \\
    && python3 -m venv /usr/local && python --version && pip --version
CMD ["python3"]
EOF
  build python:3.11-slim-bookworm
fi

if ! keep node:20-bookworm; then
  mkdir -p "$WORKDIR/ctx"
  cat > "$WORKDIR/ctx/Dockerfile" <<EOF
FROM debian:bookworm-slim
RUN $apt_install nodejs npm make ca-certificates && $apt_clean && node --version && npm --version
${EXTRA_CA_CERTS:+ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt}
CMD ["node"]
EOF
  build node:20-bookworm
fi

if ! keep postgres:16-bookworm; then
  mkdir -p "$WORKDIR/ctx"
  cat > "$WORKDIR/ctx/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
# docker/debian-base-images.sh's stand-in for the official image's entrypoint: on an empty $PGDATA,
# initdb with superuser $POSTGRES_USER (default postgres) and password $POSTGRES_PASSWORD
# (required), then CREATE DATABASE $POSTGRES_DB (default: the user's name). Local socket: trust;
# TCP: password (scram-sha-256).
set -eu
case "$1" in -*) set -- postgres "$@" ;; esac
if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?postgres: set POSTGRES_PASSWORD}"
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb -D "$PGDATA" --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256
  rm -f "$pwfile"
  printf "listen_addresses = '*'\n" >> "$PGDATA/postgresql.conf"
  printf 'host all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
    psql -v ON_ERROR_STOP=1 --username="$user" --dbname=postgres -c "CREATE DATABASE \"$db\""
    pg_ctl -D "$PGDATA" -m fast -w stop
  fi
fi
exec "$@"
EOF
  cat > "$WORKDIR/ctx/Dockerfile" <<EOF
FROM debian:bookworm-slim
RUN $apt_install postgresql-15 && $apt_clean \\
    && if [ -d /etc/postgresql/15/main ]; then pg_dropcluster 15 main; fi \\
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql \\
    && chown postgres:postgres /var/lib/postgresql/data /var/run/postgresql
COPY docker-entrypoint.sh /usr/local/bin/
ENV PATH=/usr/lib/postgresql/15/bin:\$PATH PGDATA=/var/lib/postgresql/data
VOLUME /var/lib/postgresql/data
STOPSIGNAL SIGINT
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
EOF
  chmod +x "$WORKDIR/ctx/docker-entrypoint.sh"
  build postgres:16-bookworm
fi

if ! keep redis:7-bookworm; then
  mkdir -p "$WORKDIR/ctx"
  cat > "$WORKDIR/ctx/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
# docker/debian-base-images.sh's stand-in for the official image's entrypoint: redis-server as the
# redis user, with protected mode off unless a config file is given (as the official image does).
set -eu
case "$1" in -*|*.conf) set -- redis-server "$@" ;; esac
if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
  chown -R redis:redis .
  exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi
if [ "$1" = redis-server ]; then
  case "${2:-}" in *.conf) ;; *) shift; set -- redis-server --protected-mode no "$@" ;; esac
fi
exec "$@"
EOF
  cat > "$WORKDIR/ctx/Dockerfile" <<EOF
FROM debian:bookworm-slim
RUN $apt_install redis-server && $apt_clean && mkdir /data && chown redis:redis /data
COPY docker-entrypoint.sh /usr/local/bin/
VOLUME /data
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["redis-server"]
EOF
  chmod +x "$WORKDIR/ctx/docker-entrypoint.sh"
  build redis:7-bookworm
fi

docker image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' \
  | grep -E '^(debian:bookworm-slim|python:3.11-slim-bookworm|node:20-bookworm|postgres:16-bookworm|redis:7-bookworm) '
