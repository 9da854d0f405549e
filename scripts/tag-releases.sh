#!/usr/bin/env bash
# Creates the annotated tags v0.1.0 … v0.12.0 that CHANGELOG.md names ("Tagged at ..."), each on
# the last commit of its milestone, dated as that commit. A tag already there on the same
# commit is left alone; one on another commit is an error (nothing is moved). Pushes nothing:
# after checking, `git push origin --tags`.
#
#   bash scripts/tag-releases.sh            create the missing tags
#   bash scripts/tag-releases.sh --dry-run  only say what it would do
set -euo pipefail
cd "$(dirname "$0")/.."

dry_run=false
case "${1:-}" in
  "") ;;
  -n|--dry-run) dry_run=true ;;
  *) echo "usage: bash scripts/tag-releases.sh [--dry-run]" >&2; exit 64 ;;
esac

# version  commit   what the version is (as in CHANGELOG.md)
releases=(
  "0.1.0   fc1f03b  the core library: record model and a git-backed store on libgit2"
  "0.2.0   ad128f6  the recsync tool: workspace, pull and push, conflicts, scripting"
  "0.3.0   2dbb757  many users and devices: network stores, sharing, subscriptions, watch"
  "0.4.0   1d80413  performance against git at 10k, 100k and 1M records"
  "0.5.0   c254684  trust at the edges: hostile input and edge semantics"
  "0.6.0   b29a118  durable subscriptions: nothing missed while watch was not running"
  "0.7.0   9bc48d5  the library is a product: an embeddable sync engine, a thin command line"
  "0.8.0   4284d3e  the first hour of a real user"
  "0.9.0   d4335ad  over the network as fast as git, many writers, compaction"
  "0.10.0  4427bbe  assets and end-to-end encrypted fields"
  "0.11.0  e0cf72a  trust, round three"
  "0.12.0  7dd578c  one sync engine, with what CKSyncEngine does"
)

# Check every commit before creating anything, so a bad entry leaves no half-tagged history.
failed=0
for line in "${releases[@]}"; do
  read -r version commit _ <<< "$line"
  if ! git rev-parse --quiet --verify "$commit^{commit}" > /dev/null; then
    echo "tag-releases: v$version: commit $commit is not in this repository" >&2
    failed=1
    continue
  fi
  if existing=$(git rev-parse --quiet --verify "refs/tags/v$version^{commit}"); then
    if [ "$existing" != "$(git rev-parse "$commit^{commit}")" ]; then
      echo "tag-releases: v$version already tags $(git rev-parse --short "$existing"), not $commit; left as it is" >&2
      failed=1
    fi
  fi
done
[ "$failed" = 0 ] || { echo "tag-releases: nothing tagged" >&2; exit 1; }

for line in "${releases[@]}"; do
  read -r version commit title <<< "$line"
  if git rev-parse --quiet --verify "refs/tags/v$version" > /dev/null; then
    echo "v$version: already there ($commit)"
    continue
  fi
  if $dry_run; then
    echo "v$version: would tag $commit ($title)"
    continue
  fi
  # The tag's date is the commit's, so the tag reads as the release it was.
  GIT_COMMITTER_DATE="$(git show -s --format=%cI "$commit")" \
    git tag -a "v$version" -m "recsync $version: $title" -m "See CHANGELOG.md." "$commit"
  echo "v$version: tagged $commit"
done
