package versions

import "strings"

// Every object key of the store format (docs/format.md) is built here and
// nowhere else. Keys are relative to the bucket's root:
//
//	projects/P/refs/heads/BRANCH      ref: commit id + "\n"
//	projects/P/commits/ID             commit
//	projects/P/manifests/ID           table manifest
//	projects/P/data/TABLE/ID.parquet  data file (a manifest names it by its path relative to projects/P/)
//	projects/P/runs/RUNID             run record (package mix)

// ProjectsPrefix is the prefix of every key of the store.
const ProjectsPrefix = "projects/"

// ProjectKey is the key prefix of everything in project p ("projects/P/").
func ProjectKey(p ProjectName) string { return ProjectsPrefix + string(p) + "/" }

// RefsPrefix is the key prefix of the branch refs of p.
func RefsPrefix(p ProjectName) string { return ProjectKey(p) + "refs/heads/" }

// RefKey is the key of the ref of branch b of p.
func RefKey(p ProjectName, b BranchName) string { return RefsPrefix(p) + string(b) }

// CommitsPrefix is the key prefix of the commits of p.
func CommitsPrefix(p ProjectName) string { return ProjectKey(p) + "commits/" }

// CommitKey is the key of commit c of p.
func CommitKey(p ProjectName, c CommitID) string { return CommitsPrefix(p) + string(c) }

// ManifestKey is the key of manifest m of p.
func ManifestKey(p ProjectName, m ManifestID) string {
	return ProjectKey(p) + "manifests/" + string(m)
}

// DataPath is the path, relative to its project, of data file id (a
// random hex name) of table t: what a manifest records (DataFile.Path).
func DataPath(t TableName, id string) string {
	return "data/" + string(t) + "/" + id + ".parquet"
}

// DataFileKey is the key of the data file at path (DataFile.Path, relative
// to the project) of p.
func DataFileKey(p ProjectName, path string) string { return ProjectKey(p) + path }

// RunKey is the key of the record of run id (64 hex digits) in p.
func RunKey(p ProjectName, id string) string { return ProjectKey(p) + "runs/" + id }

// projectOfMainRef returns the project whose main ref key is key.
func projectOfMainRef(key string) (ProjectName, bool) {
	rest, ok := strings.CutPrefix(key, ProjectsPrefix)
	if !ok {
		return "", false
	}
	p, _, ok := strings.Cut(rest, "/")
	if !ok || key != RefKey(ProjectName(p), MainBranch) {
		return "", false
	}
	return ProjectName(p), true
}
