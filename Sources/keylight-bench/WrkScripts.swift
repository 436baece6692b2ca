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

    /// Numbers each thread and seeds its random numbers from the run and the thread (LuaJIT
    /// starts every thread on the same sequence, so unseeded threads send the same requests).
    /// The last argument is the run's tag, which ``Wrk`` appends.
    static let threads = """
    local started = 0
    setup = function(thread)
      started = started + 1
      thread:set("tid", started)
    end
    local function seed(args)
      local tag = args[#args]
      local n = 0
      for i = 1, #tag do n = (n * 31 + tag:byte(i)) % 2147483647 end
      math.randomseed(n + tid * 7919)
      return tag .. "-" .. tid
    end
    """

    /// Cycles through `<license key> <instance id>` lines; args: file, SDK key.
    static let validate = threads + "\n" + """
    local entries = {}
    local index = 0
    init = function(args)
      for line in io.lines(args[1]) do
        local key, instance = line:match("(%S+) (%S+)")
        table.insert(entries, '{"license_key":"' .. key .. '","instance_id":"' .. instance .. '"}')
      end
      seed(args)
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
    static let activate = threads + "\n" + """
    local keys = {}
    local index = 0
    local counter = 0
    local thread_tag = ""
    init = function(args)
      for line in io.lines(args[1]) do
        local key = line:match("(%S+)")
        table.insert(keys, key)
      end
      thread_tag = seed(args)
      index = math.random(#keys)
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
