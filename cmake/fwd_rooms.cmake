# SPDX-License-Identifier: Apache-2.0
# The forwarder's rooms (docs/development.md, "The forwarder's rooms"),
# kept by the compiler. Each room of src/fwd/ is an object library that
# sees, on its include path, only a view of src/fwd/ made for it here:
#   <view>/ROOM/kd_X.h  for each room it may include: a one-line header
#                       that includes src/fwd/ROOM/kd_X.h;
#   the same name       for every other room (its own too), and for
#                       another room's state header (kd_<room>_state.h,
#                       private to its room): an #error that says why the
#                       include is refused;
#   <view>/kd_X.h       for each header of another room: an #error that
#                       says to spell it with its room.
# A file includes its own room's headers by bare name ("kd_X.h", found
# beside it) and another room's by the room ("store/kd_store.h"), so an
# include that breaks the rooms' order does not compile. The views are
# made at configure time (the headers are globbed, CONFIGURE_DEPENDS, so a
# new header configures again); a file is written only when its text
# changes.
#
# Set KD_FWD_ROOMS (every room), KD_FWD_SEES_<room> (the rooms it may
# include: those below it, and what they see) and KD_FWD_USES (what every
# room compiles against) before kd_fwd_room(ROOM SOURCES...).

set(KD_FWD_VIEWS ${PROJECT_BINARY_DIR}/fwd_rooms)

function(kd_fwd_room_view room)
  set(view ${KD_FWD_VIEWS}/${room})
  set(sees ${KD_FWD_SEES_${room}})
  if(sees)
    string(REPLACE ";" ", " seen "${sees}")
  else()
    set(seen "no other room")
  endif()
  set(made)
  foreach(other ${KD_FWD_ROOMS})
    file(GLOB headers CONFIGURE_DEPENDS
         ${PROJECT_SOURCE_DIR}/src/fwd/${other}/kd_*.h)
    foreach(path ${headers})
      get_filename_component(h ${path} NAME)
      set(out ${view}/${other}/${h})
      if(h MATCHES "^kd_.*_state\\.h$" AND NOT other STREQUAL room)
        set(text "#error \"${other}/${h} is room ${other}'s own state: \
room ${room} asks ${other}'s functions (docs/development.md, The \
forwarder's rooms)\"")
      elseif(other IN_LIST sees)
        set(text "#include \"${path}\"")
      elseif(other STREQUAL room)
        set(text "#error \"${other}/${h} in room ${room}: a room includes \
its own headers by bare name, \\\"${h}\\\"\"")
      else()
        set(text "#error \"room ${room} sees ${seen}: ${other}/${h} is \
in room ${other}, which is not below it (docs/development.md, The \
forwarder's rooms)\"")
      endif()
      file(CONFIGURE OUTPUT ${out} CONTENT
           "/* Made by cmake/fwd_rooms.cmake: room ${room}'s view. */\n${text}\n"
           @ONLY)
      list(APPEND made ${out})
      if(NOT other STREQUAL room)
        set(out ${view}/${h})
        if(h MATCHES "^kd_.*_state\\.h$")
          set(text "#error \"${h} is room ${other}'s own state: room \
${room} asks ${other}'s functions\"")
        else()
          set(text "#error \"${h} is room ${other}'s header: include it as \
\\\"${other}/${h}\\\"\"")
        endif()
        file(CONFIGURE OUTPUT ${out} CONTENT
             "/* Made by cmake/fwd_rooms.cmake: room ${room}'s view. */\n${text}\n"
             @ONLY)
        list(APPEND made ${out})
      endif()
    endforeach()
  endforeach()
  # A header gone since the last configure leaves no stale copy behind.
  file(GLOB_RECURSE there ${view}/*)
  foreach(old ${there})
    if(NOT old IN_LIST made)
      file(REMOVE ${old})
    endif()
  endforeach()
endfunction()

# Room ROOM's object library of the given sources, on its view.
function(kd_fwd_room room)
  kd_fwd_room_view(${room})
  add_library(kd_fwd_${room} OBJECT ${ARGN})
  target_include_directories(kd_fwd_${room} PRIVATE ${KD_FWD_VIEWS}/${room})
  target_link_libraries(kd_fwd_${room} PRIVATE ${KD_FWD_USES})
endfunction()
