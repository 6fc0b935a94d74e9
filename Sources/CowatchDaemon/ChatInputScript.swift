import CowatchCore
import CowatchMpv
import Foundation

/// The chat line in the player window: a small Lua script of ours, loaded into mpv.
///
/// `c` (bound in `WindowBindings`) sends `script-message cowatch-chat-open`; the script then
/// shows `chat: …` at the bottom left of the OSD and takes the keyboard: typed text, Backspace,
/// Enter (sends `script-message cowatch-chat LINE` and closes) and Esc (closes, sends nothing).
/// While it is open no other key works (Space types a space instead of pausing).
///
/// Why not mpv's own console: in mpv 0.35 it shows the player's log in colour, shows the command
/// it would run as the prompt and stays open after Enter; `mp.input`, which fixes that, is 0.38.
///
/// The script reports its state as the shared script property `cowatch-chat` (`open:TEXT` or
/// `closed`), which tests read through mpv's IPC.
enum ChatInputScript {
    static let openMessage = "cowatch-chat-open"
    static let fileName = "chat-input.lua"

    /// Writes the script into the state directory (0600) and loads it into the player.
    ///
    /// Threading: any thread (file system, then a thread-safe player call).
    /// Errors: the state directory's or the player's, as `CowatchError`; the window then has no
    /// chat key, and `cowatch chat` still works.
    static func load(into player: any MediaPlayer, environment: [String: String]) throws(CowatchError) {
        let path = try StatePaths.writeStateFile(fileName, contents: Array(source.utf8), environment: environment)
        do {
            try player.command(["load-script", path])
        } catch {
            throw CowatchError(.ioError, "mpv would not load the chat script: \(error)")
        }
    }

    static let source = #"""
        -- Cowatch's chat line (written by cowatchd; changes are overwritten at its next start).
        local mp = require 'mp'
        local utils = require 'mp.utils'

        local line = nil  -- the text being typed; nil while closed
        local opening, closing = false, false
        local overlay = mp.create_osd_overlay('ass-events')
        local keys = {'cowatch-chat-type', 'cowatch-chat-bs', 'cowatch-chat-enter', 'cowatch-chat-kp-enter', 'cowatch-chat-esc'}

        local function report(state)
            pcall(utils.shared_script_property_set, 'cowatch-chat', state)
        end

        -- Shown as typed: ASS would read braces and backslashes as markup.
        local function escaped(text)
            return (text:gsub('\\', '\\\239\187\191'):gsub('{', '\\{'):gsub('^ ', '\\h'))
        end

        local function render()
            overlay.data = '{\\an1\\bord2}chat: ' .. escaped(line) .. '_'
            overlay:update()
            report('open:' .. line)
        end

        local function close()
            line = nil
            for _, name in ipairs(keys) do mp.remove_key_binding(name) end
            overlay:remove()
            closing = true  -- reported once the bindings are gone (see the idle handler)
        end

        local function submit()
            local text = line
            close()
            if text and text:match('%S') then mp.commandv('script-message', 'cowatch-chat', text) end
        end

        local function typed(event)
            if not line or event.event == 'up' or not event.key_text or #line >= 1000 then return end
            line = line .. event.key_text
            render()
        end

        local function backspace()
            local cut = line and #line or 0
            if cut == 0 then return end
            -- Back over UTF-8 continuation bytes to the start of the last character.
            while cut > 1 and line:byte(cut) >= 0x80 and line:byte(cut) < 0xC0 do cut = cut - 1 end
            line = line:sub(1, cut - 1)
            render()
        end

        mp.register_script_message('cowatch-chat-open', function()
            if line then return end
            line = ''
            mp.add_forced_key_binding('any_unicode', 'cowatch-chat-type', typed, {repeatable = true, complex = true})
            mp.add_forced_key_binding('BS', 'cowatch-chat-bs', backspace, {repeatable = true})
            mp.add_forced_key_binding('ENTER', 'cowatch-chat-enter', submit)
            mp.add_forced_key_binding('KP_ENTER', 'cowatch-chat-kp-enter', submit)
            mp.add_forced_key_binding('ESC', 'cowatch-chat-esc', close)
            opening = true
        end)
        -- mp.defaults applies added and removed bindings when the script goes idle: the state is
        -- reported after that, so whoever reads "open" knows the keys are ours, and "closed"
        -- that they are the player's again.
        mp.register_idle(function()
            if opening and line then render() end
            if closing and not line then report('closed') end
            opening, closing = false, false
        end)
        report('closed')
        """#
}
