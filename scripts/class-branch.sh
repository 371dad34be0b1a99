#!/bin/sh
# Make (or move) the branch a graded class's JupyterHub pulls: one commit whose tree is release/ of a commit of
# main and nothing else, so nbgitpuller (the class site's launch button, `jaxpath site --for-class`) brings no
# source/ notebook, hidden test or variant into a student's home. Then push it: git push origin class.
#   sh scripts/class-branch.sh [BRANCH [COMMIT]]      (defaults: class, HEAD)
set -eu
branch=${1:-class}
commit=${2:-HEAD}
release=$(git rev-parse "$commit:release")
tree=$(printf '040000 tree %s\trelease\n' "$release" | git mktree)
parent=$(git rev-parse -q --verify "refs/heads/$branch" || true)
msg="release/ of $(git rev-parse --short "$commit") for the class (scripts/class-branch.sh)"
if [ -n "$parent" ] && [ "$(git rev-parse "$parent^{tree}")" = "$tree" ]; then
  echo "$branch already holds release/ of $commit"
  exit 0
fi
new=$(echo "$msg" | git commit-tree "$tree" ${parent:+-p "$parent"})
git update-ref "refs/heads/$branch" "$new"
echo "$branch -> $(git rev-parse --short "$new"): $msg"
