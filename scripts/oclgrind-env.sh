# Source this to add Oclgrind as a second OpenCL platform beside the system's
# (PoCL): it writes an ICD folder in a temporary directory and points the ICD
# loader at it, with Oclgrind's checkers switched on.
#   . scripts/oclgrind-env.sh && seqcl check --device opencl:~oclgrind --quick
SEQCL_OCLGRIND_VENDORS=$(mktemp -d "${TMPDIR:-/tmp}/seqcl-icd.XXXXXX")
for f in /etc/OpenCL/vendors/*.icd; do [ -e "$f" ] && cp "$f" "$SEQCL_OCLGRIND_VENDORS/"; done
echo /usr/lib/oclgrind/liboclgrind-rt-icd.so > "$SEQCL_OCLGRIND_VENDORS/oclgrind.icd"
export OCL_ICD_VENDORS=$SEQCL_OCLGRIND_VENDORS
export OCLGRIND_DATA_RACES=1 OCLGRIND_UNINITIALIZED=1 OCLGRIND_CHECK_API=1
