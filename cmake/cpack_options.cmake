# SPDX-License-Identifier: Apache-2.0
# CPACK_PROJECT_CONFIG_FILE: read by cpack for each generator it runs.
# A .deb puts its files under /usr and its configuration in /etc, and the
# binaries, the systemd unit and the man pages name the paths the tree was
# configured with: a tree configured otherwise (the default /usr/local)
# would make a package that looks for /usr/local/etc/kdelay/kdelay.conf.
if(CPACK_GENERATOR STREQUAL "DEB")
  if(NOT CPACK_PACKAGING_INSTALL_PREFIX STREQUAL "/usr" OR
     NOT CPACK_KDELAY_SYSCONFDIR STREQUAL "/etc")
    message(FATAL_ERROR
      "cpack -G DEB: this tree installs to ${CPACK_PACKAGING_INSTALL_PREFIX} "
      "with its configuration in ${CPACK_KDELAY_SYSCONFDIR}; configure one "
      "for Debian's paths: cmake -S . -B build/deb -DCMAKE_INSTALL_PREFIX=/usr "
      "-DCMAKE_INSTALL_SYSCONFDIR=/etc -DBUILD_TESTING=OFF")
  endif()
endif()
# The package's version as the build made it (cmake/version.sh, target
# kd_version): 0.3.0 for a release, 0.3.0~dev+<commit> otherwise ("~"
# sorts before the release).
if(CPACK_GENERATOR STREQUAL "DEB")
  if(NOT EXISTS "${CPACK_KDELAY_VERSION_CMAKE}")
    message(FATAL_ERROR "cpack: ${CPACK_KDELAY_VERSION_CMAKE} missing: build the tree first")
  endif()
  include(${CPACK_KDELAY_VERSION_CMAKE})
  set(CPACK_DEBIAN_PACKAGE_VERSION "${KDELAY_BUILD_VERSION_DEB}")
  set(CPACK_PACKAGE_VERSION "${KDELAY_BUILD_VERSION_DEB}")
endif()
