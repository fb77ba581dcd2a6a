# Docker Stacks' start.sh sources this before the server starts: the course's notebooks into the
# learner's home (on JupyterHub usually a volume mounted over the image's), once, so a learner's
# work is never overwritten; removing the folder brings back a fresh copy at the next start.
# COURSE_HOME (e.g. singleuser.extraEnv in Zero to JupyterHub) puts them elsewhere.
course_notebooks="${COURSE_NOTEBOOKS:-/opt/course/notebooks}"
course_home="${COURSE_HOME:-/home/${NB_USER}/gpu-patterns-course}"
if [ ! -e "${course_home}" ]; then
    mkdir -p "$(dirname "${course_home}")"
    cp -r "${course_notebooks}" "${course_home}"
    if [ "$(id -u)" = 0 ]; then
        chown -R "${NB_UID}:${NB_GID}" "${course_home}"
    fi
fi
