# The redis stand-in's entrypoint (see Dockerfile).
if [ "${1:-}" = redis-server ]; then
	case "${2:-}" in
	*.conf) ;;
	*) shift; set -- redis-server --protected-mode no "$@" ;;
	esac
fi
exec "$@"
