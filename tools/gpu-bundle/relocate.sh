# OpenMPI and PMIx relocated to the unpacked bundle (sourced by env.sh and
# bin/mpirun with WIOLA_GPU set to the bundle's folder). OpenMPI reads its
# install folders from these variables before the paths compiled into it, so
# its components, help texts and settings come from the bundle.
export OPAL_PREFIX="$WIOLA_GPU" OPAL_EXEC_PREFIX="$WIOLA_GPU" OPAL_BINDIR="$WIOLA_GPU/bin"
export OPAL_LIBDIR="$WIOLA_GPU/lib" OPAL_PKGLIBDIR="$WIOLA_GPU/lib/openmpi"
export OPAL_DATAROOTDIR="$WIOLA_GPU/share" OPAL_DATADIR="$WIOLA_GPU/share"
export OPAL_PKGDATADIR="$WIOLA_GPU/share/openmpi" OPAL_SYSCONFDIR="$WIOLA_GPU/etc"
export PMIX_MCA_mca_base_component_path="$WIOLA_GPU/lib/pmix" PMIX_INSTALL_PREFIX="$WIOLA_GPU"
export PMIX_PREFIX="$WIOLA_GPU"
# Without ssh or rsh (a container) mpirun's remote launcher refuses to start
# even for ranks on this machine; the single-machine launcher needs neither.
if [ -z "${OMPI_MCA_plm:-}" ] && ! command -v ssh >/dev/null 2>&1 && ! command -v rsh >/dev/null 2>&1; then
  export OMPI_MCA_plm=isolated
fi
