#!/bin/sh
# A stand-in for an agent CLI speaking stream-json (one JSON object per line in and out).
# It answers every user message; special messages drive the test scenarios:
#   "ask tool"     emits a tool_request and waits for the answer on stdin
#   "write NAME"   writes a file in the workspace (for project_changes)
#   "stubborn"     stops reading and ignores SIGTERM (only a forced end stops it)
#   "exit N"       exits with status N
#   "sleep N"      works for N seconds before answering
#   "fail"         answers with an error result
printf '{"type":"system","subtype":"init","cwd":"%s","session_id":"%s"}\n' "$PWD" "$JARVIS_SESSION_ID"
while IFS= read -r line; do
  case "$line" in
    *'"type":"tool_response"'*|*'"type":"control_response"'*)
      printf '{"type":"assistant","message":{"content":[{"type":"text","text":"tool answered"}]},"answer":%s}\n' "$line"
      continue;;
  esac
  text=$(printf '%s' "$line" | sed -n 's/.*"text":"\([^"]*\)".*/\1/p')
  [ -n "$text" ] || text=$line
  case "$text" in
    "exit "*) printf '{"type":"result","subtype":"success","result":"bye"}\n'; exit "${text#exit }";;
    "ask tool") printf '{"type":"tool_request","request_id":"req-1","tool":"jarvis_check_status","arguments":{}}\n'
                continue;;
    "sleep "*) sleep "${text#sleep }";;
    "fail") printf '{"type":"result","subtype":"error_during_execution","is_error":true,"result":"it broke"}\n'
            continue;;
    "write "*) echo "written by the agent" > "${text#write }";;
    "stubborn") trap '' TERM HUP; while :; do sleep 1; done;;
  esac
  printf '{"type":"assistant","message":{"content":[{"type":"text","text":"echo: %s"}]}}\n' "$text"
  printf '{"type":"result","subtype":"success","result":"echo: %s"}\n' "$text"
done
printf '{"type":"result","subtype":"input_closed","result":"bye"}\n'
