/// Lua scripts for wrk. Each prints one JSON line in `done`, which ``Wrk`` parses.
enum WrkScripts {
    static let report = """
    done = function(summary, latency, requests)
      local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
      io.write(string.format('{"requests":%d,"duration_us":%d,"errors":%d,"non2xx":%d,"p50_us":%d,"p99_us":%d}\\n',
        summary.requests, summary.duration, errors, summary.errors.status, latency:percentile(50), latency:percentile(99)))
    end
    """

    static let healthz = report

    /// Cycles through `<license key> <instance id>` lines; args: file, SDK key.
    static let validate = """
    local entries = {}
    local index = 0
    init = function(args)
      for line in io.lines(args[1]) do
        local key, instance = line:match("(%S+) (%S+)")
        table.insert(entries, '{"license_key":"' .. key .. '","instance_id":"' .. instance .. '"}')
      end
      index = math.random(#entries)
      wrk.headers["X-Keylight-SDK-Key"] = args[2]
      wrk.headers["Content-Type"] = "application/json"
    end
    request = function()
      index = index % #entries + 1
      return wrk.format("POST", nil, nil, entries[index])
    end
    """ + "\n" + report

    /// Activates a fresh machine on each request, cycling through license keys; args: file, SDK key.
    static let activate = """
    local keys = {}
    local index = 0
    local counter = 0
    local thread_tag = ""
    init = function(args)
      for line in io.lines(args[1]) do
        local key = line:match("(%S+)")
        table.insert(keys, key)
      end
      index = math.random(#keys)
      thread_tag = tostring(math.random(1, 1000000000))
      wrk.headers["X-Keylight-SDK-Key"] = args[2]
      wrk.headers["Content-Type"] = "application/json"
    end
    request = function()
      index = index % #keys + 1
      counter = counter + 1
      return wrk.format("POST", nil, nil,
        '{"license_key":"' .. keys[index] .. '","instance_name":"bench","machine_hash":"' .. thread_tag .. '-' .. counter .. '"}')
    end
    """ + "\n" + report
}

extension WrkScripts {
    /// `validate` with `X-Keylight-Nonce`, so every response is signed (protocol section 3).
    static let signedValidate = validate.replacingOccurrences(
        of: #"wrk.headers["Content-Type"] = "application/json""#,
        with: #"wrk.headers["Content-Type"] = "application/json"; wrk.headers["X-Keylight-Nonce"] = "AAECAwQFBgcICQoL""#
    )
}
