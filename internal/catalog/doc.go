// Package catalog finds the models on this machine and resolves the name a
// request gives to one of them, so that models a user already downloaded
// just appear.
//
// Models are folders: under each models directory (the -models-dir flag or
// PRISM_MODELS_DIR, then ~/.prism/models), the directory itself, its
// children (id: the folder name) and grandchildren (id: "org/name"); and
// the Hugging Face hub cache (hub/models--ORG--NAME/snapshots/REV, the
// revision refs/main names), with id "ORG/NAME". The first source to hold
// an id wins; later ones are reported as shadowed, not dropped silently.
//
// A name resolves by exact id, then by a unique case-insensitive match of
// the id or of its NAME part, then by a unique case-insensitive substring.
// Several matches are an *Error with code ambiguous_model listing them
// (HTTP 400); none is model_not_found listing what exists (HTTP 404). A
// ":VARIANT" suffix (fp32, fp16, q8, int8, uint8, q4, q4f16, bnb4) is split
// off and carried to the loader, which knows the variants a folder holds.
//
// The package reads no environment: the directories are given to Scan
// (internal/config derives them, the hub cache from HF_HUB_CACHE, HF_HOME
// and XDG_CACHE_HOME).
package catalog
